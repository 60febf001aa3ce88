package emq

// Event is something a verb did that INFO emq counts, beside each verb's
// calls and refusals.
type Event uint8

// The events, each shown as emq_<name> in INFO emq (EventNames).
const (
	JobsAdmitted Event = iota
	JobsDuplicate
	EntriesAppended
	EnvelopesPublished
	FailuresCounted
	JobsClaimed
	JobsExtended
	JobsAcked
	JobsRetried
	JobsDelayed
	JobsDead
	JobsPromoted
	StallsRequeued
	DanglingDropped
	JobsRevived
	MessagesParked
	ParksNoop

	// NumEvents is how many events there are.
	NumEvents
)

// EventNames are the INFO field names of the events, in their order.
var EventNames = [NumEvents]string{
	JobsAdmitted:       "jobs_admitted",
	JobsDuplicate:      "jobs_duplicate",
	EntriesAppended:    "entries_appended",
	EnvelopesPublished: "envelopes_published",
	FailuresCounted:    "failures_counted",
	JobsClaimed:        "jobs_claimed",
	JobsExtended:       "jobs_extended",
	JobsAcked:          "jobs_acked",
	JobsRetried:        "jobs_retried",
	JobsDelayed:        "jobs_delayed",
	JobsDead:           "jobs_dead",
	JobsPromoted:       "jobs_promoted",
	StallsRequeued:     "stalls_requeued",
	DanglingDropped:    "dangling_dropped",
	JobsRevived:        "jobs_revived",
	MessagesParked:     "parked",
	ParksNoop:          "parks_noop",
}
