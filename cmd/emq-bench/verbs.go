package main

import "github.com/echomq/emq/ids"

// The EMQ verbs' command lines, shared by the comparisons and the soak.

// enqueueArgs appends what follows EMQ.ENQUEUE (and the admit script's
// SHA): numkeys, the job and pending keys of the queue in prefix, the id,
// the payload.
func enqueueArgs(w *cmdBuf, prefix string, job []byte) {
	w.str("2")
	w.join([]byte(prefix), []byte("}:job:"), job)
	w.join([]byte(prefix), []byte("}:pending"))
	w.join(job)
	w.str(payload)
}

// appendCmd appends EMQ.APPEND of n entries, entry i under evt(i), each
// holding the one pair f v.
func appendCmd(w *cmdBuf, key string, n int, evt func(i int, buf *[ids.Len]byte) []byte) {
	w.command("EMQ.APPEND", 4+4*n)
	w.str("1")
	w.str(key)
	w.int(int64(n))
	for i := range n {
		var buf [ids.Len]byte
		w.join(evt(i, &buf))
		w.str("1")
		w.str("f")
		w.str("v")
	}
}

// publishCmd appends EMQ.PUBLISH of the envelope msg, payload under evt.
func publishCmd(w *cmdBuf, key string, evt, msg []byte) {
	w.command("EMQ.PUBLISH", 10)
	w.str("1")
	w.str(key)
	w.str("1")
	w.join(evt)
	w.str("2")
	w.str("msg")
	w.join(msg)
	w.str("payload")
	w.str(payload)
}
