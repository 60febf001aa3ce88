package emq

import "github.com/echomq/emq/errors"

// The refusals whose text never changes are made once: refusing such a
// call allocates nothing.
var (
	errTTL           = static(errors.Shape, "fail_ttl_ms must be a positive integer")
	errTTLRounding   = static(errors.Shape, "fail_ttl_ms overflows when rounded up to seconds")
	errTTLExpiry     = static(errors.Shape, "fail_ttl_ms overflows the absolute expiry")
	errN             = static(errors.Shape, "n must be a positive integer")
	errJobLayout     = static(errors.Layout, "job key must be emq:{<queue>}:job:<JOB id>")
	errPendingLayout = static(errors.Layout, "pending key must be emq:{<queue>}:pending")
	errQueues        = static(errors.Layout, "job key and pending key name different queues")
	errJobID         = static(errors.Layout, "the job key's id differs from the id argument")
	errFailLayout    = static(errors.Layout, "failure key must be emq:{<topic>}:fail:<SUB id>:<MSG id>")
	errStreamLayout  = static(errors.Layout, "stream key must be emq:{<topic>}:stream:<sname>")
	errSubKind       = static(errors.Kind, "subscriber id must be SUB-namespaced")
	errMsgKind       = static(errors.Kind, "message id must be MSG-namespaced")
	errNotInteger    = static(errors.Count, "value is not an integer or out of range")
	errOverflow      = static(errors.Count, "increment or decrement would overflow")

	// ErrJobKind is ENQUEUE's refusal of an id that is not a JOB id; clients
	// match on its exact text.
	ErrJobKind = static(errors.Kind, "job id must be JOB-namespaced")
)

func static(code errors.Code, msg string) *errors.Refusal {
	return &errors.Refusal{Code: code, Msg: msg}
}
