package inspect

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnreachableErrorSaysWhy: the text says "did not answer" of
// primaries that did not, "is not read yet" of those the client has not
// learned of, "is down" of those the cluster flags failed, and each of
// its own when they are named together.
func TestUnreachableErrorSaysWhy(t *testing.T) {
	timeout := errors.New("i/o timeout")
	for _, tc := range []struct {
		name string
		e    UnreachableError
		want string
	}{
		{"silent", UnreachableError{Addrs: []string{"a:1"}, Err: timeout},
			"inspect: primary a:1 did not answer (i/o timeout): the queues it serves are left out"},
		{"unlearned", UnreachableError{Addrs: []string{"a:1"}, Err: errUnlearned},
			"inspect: primary a:1 is not read yet (" + errUnlearned.Error() + "): the queues it serves are left out"},
		{"failed", UnreachableError{Addrs: []string{"a:1"}, Err: errFailed},
			"inspect: primary a:1 is down (" + errFailed.Error() + "): the queues it serves are left out"},
		{"silent and unlearned", UnreachableError{Addrs: []string{"a:1", "b:2"}, Err: errUnlearned, whys: []error{errUnlearned, timeout}},
			"inspect: primary a:1 is not read yet (" + errUnlearned.Error() + "); primary b:2 did not answer (i/o timeout): the queues they serve are left out"},
		{"two silent, one failed", UnreachableError{Addrs: []string{"a:1", "b:2", "c:3"}, Err: timeout, whys: []error{timeout, errFailed, errSilent}},
			"inspect: primary a:1, c:3 did not answer (i/o timeout); primary b:2 is down (" + errFailed.Error() + "): the queues they serve are left out"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.e.Error()) })
	}
}
