// Package keys builds and splits the EchoMQ key layouts.
//
// Every key lives under the emq: prefix and carries its queue or topic name
// as a hash tag, so that all the keys one verb touches share a cluster slot:
//
//	emq:{<queue>}:job:<JOB id>             job row (hash)
//	emq:{<queue>}:pending                  pending set (sorted set)
//	emq:{<queue>}:active                   active set (sorted set, by lease deadline)
//	emq:{<queue>}:delayed                  delayed set (sorted set, by due time)
//	emq:{<queue>}:dead                     dead set (sorted set, by time of death)
//	emq:{<queue>}:config                   settings (hash: paused, rate_max, rate_ms, events, repeat_seq)
//	emq:{<queue>}:limiter                  jobs delivered in the rate window (string, expires at its end)
//	emq:{<queue>}:events                   lifecycle events (stream)
//	emq:{<queue>}:repeat:<name>            one repeat schedule (hash)
//	emq:{<queue>}:repeats                  the schedules by next tick (sorted set)
//	emq:{<topic>}:stream:<sname>           stream
//	emq:{<topic>}:fail:<SUB id>:<MSG id>   failure count (string)
//
// Splitting checks structure only — prefix, hash tag, segment names — and
// hands back the id segments as bytes: whether they are ids of the right
// namespace is the caller's next question.
package keys

import "bytes"

const prefix = "emq:{"

// ValidName reports whether b can be a queue or topic name: one or more
// bytes with no '{', '}' or NUL.
func ValidName(b []byte) bool {
	for _, c := range b {
		if c == '{' || c == '}' || c == 0 {
			return false
		}
	}
	return len(b) > 0
}

// ValidStreamName reports whether b can be a stream's sname: a valid name
// with no ':' either.
func ValidStreamName(b []byte) bool {
	return ValidName(b) && bytes.IndexByte(b, ':') < 0
}

// split reads emq:{<name>}:<kind> and returns the name and what follows the
// kind. ok is false when the key does not start that way.
func split(key []byte, kind string) (name, rest []byte, ok bool) {
	if len(key) < len(prefix) || string(key[:len(prefix)]) != prefix {
		return nil, nil, false
	}
	key = key[len(prefix):]
	end := nameEnd(key)
	if end <= 0 {
		return nil, nil, false
	}
	name, key = key[:end], key[end+1:]
	if len(key) < 1+len(kind) || key[0] != ':' || string(key[1:1+len(kind)]) != kind {
		return nil, nil, false
	}
	return name, key[1+len(kind):], true
}

// nameEnd is the index of the '}' that ends the name key starts with, or
// -1 when a '{' or NUL comes first or there is none: one pass for what
// bytes.IndexByte and ValidName would check in two, one table lookup a
// byte (on short names, faster than either).
func nameEnd(key []byte) int {
	for i, c := range key {
		if nameStop[c] {
			if c == '}' {
				return i
			}
			return -1
		}
	}
	return -1
}

// nameStop are the bytes that end a name: '}', and '{' and NUL, which no
// name holds.
var nameStop = [256]bool{'}': true, '{': true, 0: true}

// SplitJob splits emq:{<queue>}:job:<id>. The id is one segment: a ':' in
// it is the key's structure going wrong, not an id of the wrong namespace.
func SplitJob(key []byte) (queue, id []byte, ok bool) {
	queue, id, ok = split(key, "job:")
	return queue, id, ok && bytes.IndexByte(id, ':') < 0
}

// The sets of a queue, and its other keys of one segment.
const (
	PendingSet = "pending"
	ActiveSet  = "active"
	DelayedSet = "delayed"
	DeadSet    = "dead"
	Config     = "config"
	Limiter    = "limiter"
	Events     = "events"
	Repeats    = "repeats"
)

// SplitSet splits emq:{<queue>}:<set>, set being one of the queue's sets.
func SplitSet(key []byte, set string) (queue []byte, ok bool) {
	queue, rest, ok := split(key, set)
	return queue, ok && len(rest) == 0
}

// SplitSetOf splits key as SplitSet does when the call's queue is known
// already (nil: not yet): a key of that queue, which an earlier split found
// a valid name, is recognised by comparison alone.
func SplitSetOf(key []byte, set string, queue []byte) (q []byte, ok bool) {
	n := len(prefix) + len(queue)
	if queue != nil && len(key) == n+2+len(set) && string(key[:len(prefix)]) == prefix &&
		string(key[len(prefix):n]) == string(queue) && key[n] == '}' && key[n+1] == ':' && string(key[n+2:]) == set {
		return key[len(prefix):n], true
	}
	return SplitSet(key, set)
}

// SplitRepeat splits emq:{<queue>}:repeat:<name>: the schedule's name is
// a valid name (no '{', '}' or NUL), of at most MaxRepeatName bytes.
func SplitRepeat(key []byte) (queue, name []byte, ok bool) {
	queue, name, ok = split(key, "repeat:")
	return queue, name, ok && ValidName(name) && len(name) <= MaxRepeatName
}

// MaxRepeatName bounds a schedule's name.
const MaxRepeatName = 200

// SplitPending splits emq:{<queue>}:pending.
func SplitPending(key []byte) (queue []byte, ok bool) { return SplitSet(key, PendingSet) }

// SplitStream splits emq:{<topic>}:stream:<sname>.
func SplitStream(key []byte) (topic, sname []byte, ok bool) {
	topic, sname, ok = split(key, "stream:")
	return topic, sname, ok && ValidStreamName(sname)
}

// SplitFail splits emq:{<topic>}:fail:<sub id>:<msg id>: exactly two
// non-empty id segments.
func SplitFail(key []byte) (topic, sub, msg []byte, ok bool) {
	topic, rest, ok := split(key, "fail:")
	colon := bytes.IndexByte(rest, ':')
	if !ok || colon <= 0 || colon == len(rest)-1 || bytes.IndexByte(rest[colon+1:], ':') >= 0 {
		return nil, nil, nil, false
	}
	return topic, rest[:colon], rest[colon+1:], true
}

// Job returns the job row key of id in queue.
func Job(queue, id string) string { return prefix + queue + "}:job:" + id }

// AppendJob appends the job row key of id in queue to dst.
func AppendJob(dst, queue, id []byte) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, queue...)
	dst = append(dst, "}:job:"...)
	return append(dst, id...)
}

// AppendSet appends the key of the queue's set (or other one-segment key:
// Config, Limiter, Events, Repeats) to dst.
func AppendSet(dst, queue []byte, set string) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, queue...)
	dst = append(dst, "}:"...)
	return append(dst, set...)
}

// Repeat returns the key of schedule name of queue.
func Repeat(queue, name string) string { return prefix + queue + "}:repeat:" + name }

// AppendRepeat appends the key of schedule name of queue to dst.
func AppendRepeat(dst, queue, name []byte) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, queue...)
	dst = append(dst, "}:repeat:"...)
	return append(dst, name...)
}

// Set returns the key of the queue's set (PendingSet, ActiveSet, …).
func Set(queue, set string) string { return prefix + queue + "}:" + set }

// Around returns what stands before and after a queue's name in the key of
// its set (or other one-segment key: Config, …): Set(queue, set) is head +
// queue + tail.
func Around(set string) (head, tail string) { return prefix, "}:" + set }

// Pending returns the pending set key of queue.
func Pending(queue string) string { return Set(queue, PendingSet) }

// Stream returns the key of stream sname of topic.
func Stream(topic, sname string) string { return prefix + topic + "}:stream:" + sname }

// Fail returns the failure count key of message msg for subscriber sub.
func Fail(topic, sub, msg string) string { return prefix + topic + "}:fail:" + sub + ":" + msg }
