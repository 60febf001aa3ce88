package client

import (
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// The client checks what it sends in the order the module does (SPEC §4),
// with the module's codes and words, so a call refused on a node with the
// module is refused the same way, writing nothing, on a fallback node.

// checkName refuses a queue or topic name the key layouts cannot carry.
func checkName(name, what string) error {
	if !keys.ValidName([]byte(name)) {
		return emqerrors.New(emqerrors.Layout, "%s name must be 1 or more bytes with no {, } or NUL", what)
	}
	return nil
}

// checkBatch checks entries bound for stream of topic: their shape, the
// names, the EVT ids, then that the batch increases.
func checkBatch(topic, stream string, entries []Entry) error {
	if len(entries) == 0 {
		return emqerrors.New(emqerrors.Shape, "n must be a positive integer")
	}
	for i, e := range entries {
		if len(e.Fields) == 0 {
			return emqerrors.New(emqerrors.Shape, "entry %d: pairs must be a positive integer", i+1)
		}
		for _, f := range e.Fields {
			switch f.Name {
			case "":
				return emqerrors.New(emqerrors.Shape, "entry %d: a field name is empty", i+1)
			case "id":
				return emqerrors.New(emqerrors.Shape, "entry %d: the field name id is reserved", i+1)
			}
		}
	}
	if err := checkName(topic, "topic"); err != nil {
		return err
	}
	if !keys.ValidStreamName([]byte(stream)) {
		return emqerrors.New(emqerrors.Layout, "stream name must be 1 or more bytes with no {, }, : or NUL")
	}
	for i, e := range entries {
		if !validID(e.ID, ids.Evt) {
			return emqerrors.New(emqerrors.Kind, "entry %d: event id must be EVT-namespaced", i+1)
		}
	}
	for i := 1; i < len(entries); i++ {
		prev, id := entries[i-1].ID.StreamID(), entries[i].ID.StreamID()
		if !prev.Less(id) {
			return emqerrors.New(emqerrors.Order, "entry %d: %s is not above entry %d's %s", i+1, id, i, prev)
		}
	}
	return nil
}

// checkEnvelope checks what makes env an envelope: a MSG id, and no other
// field named msg or payload.
func checkEnvelope(env Envelope) error {
	if !validID(env.Msg, ids.Msg) {
		return emqerrors.New(emqerrors.Envelope, "entry 1: msg must hold a MSG id")
	}
	for _, f := range env.Fields {
		if f.Name == "msg" || f.Name == "payload" {
			return emqerrors.New(emqerrors.Envelope, "entry 1: an envelope holds msg and payload, each exactly once")
		}
	}
	return nil
}
