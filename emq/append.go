package emq

// Append appends a batch of entries to a stream, whole or not at all:
//
//	EMQ.APPEND 1 emq:{t}:stream:<sname> <n> <EVT id> <pairs> <field> <value> …
//
// It replies the stream IDs of the entries, in order.
func Append(c Call) error {
	return appendBatch(c, appendRules(c.Limits))
}

func appendRules(l Limits) batchRules { return batchRules{maxItems: l.AppendMaxEntries} }
