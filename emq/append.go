package emq

// Append appends a batch of entries to a stream, whole or not at all:
//
//	EMQ.APPEND 1 emq:{t}:stream:<sname> <n> <EVT id> <pairs> <field> <value> …
//
// It replies the stream IDs of the entries, in order.
var Append = &Verb{Name: "EMQ.APPEND", Arity: streamArity, Keys: 1, Cap: "append",
	Check: func(a [][]byte, _ int64) error { return checkEntries(a, appendRules(Limits{}), new(Plan)) },
	Run:   func(c Call) error { return appendBatch(c, appendRules(c.Limits)) }}

func appendRules(l Limits) batchRules {
	return batchRules{maxItems: l.AppendMaxEntries, counter: EntriesAppended}
}
