package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// Publish is the durable publish of one envelope:
//
//	EMQ.PUBLISH 1 emq:{t}:stream:msgs 1 <EVT id> <pairs> <field> <value> …
//
// It is EMQ.APPEND of exactly one entry to the stream msgs, whose fields
// make an envelope: msg (a MSG id) and payload, each exactly once.
var Publish = &Verb{Name: "EMQ.PUBLISH", Arity: streamArity, Keys: 1, Cap: "publish",
	Check: func(a [][]byte, _ int64) error { return checkEntries(a, publishRules, new(Plan)) },
	Run:   func(c Call) error { return appendBatch(c, publishRules) }}

var publishRules = batchRules{sname: "msgs", entries: 1, entry: envelope, counter: EnvelopesPublished}

// envelope checks that entry n's fields hold msg and payload, each exactly
// once, and that msg holds a MSG id: an id in the wrong place is EMQKIND, as
// every id is, so it is found while counting, before the envelope's rule.
func envelope(a [][]byte, w *Write, n int) error {
	msgs, payloads := 0, 0
	for f := w.First; f < w.First+2*w.Pairs; f += 2 {
		switch string(a[f]) {
		case "msg":
			msgs++
			if !ids.Valid(ids.Msg, a[f+1]) {
				return errors.New(errors.Kind, "entry %d: msg must hold a MSG id", n)
			}
		case "payload":
			payloads++
		}
	}
	if msgs != 1 || payloads != 1 {
		return errors.New(errors.Envelope, "entry %d: an envelope holds msg and payload, each exactly once", n)
	}
	return nil
}
