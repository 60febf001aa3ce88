package emq

// Counter is something a verb did that INFO emq counts, beside each verb's
// calls and refusals.
type Counter uint8

// The counters, each shown as emq_<name> in INFO emq (CounterNames).
const (
	JobsAdmitted Counter = iota
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
	JobsScheduled
	JobsRemoved
	RepeatsTicked
	EventsAppended
	Settled
	SettlesRefused
	ClaimsPaused
	ClaimsLimited
	JobsRefused
	RepeatsHeld
	JobsReleased

	// NumCounters is how many counters there are.
	NumCounters
)

// CounterNames are the INFO field names of the counters, in their order.
var CounterNames = [NumCounters]string{
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
	JobsScheduled:      "jobs_scheduled",
	JobsRemoved:        "jobs_removed",
	RepeatsTicked:      "repeats_ticked",
	EventsAppended:     "events_appended",
	Settled:            "settled",
	SettlesRefused:     "settles_refused",
	ClaimsPaused:       "claims_paused",
	ClaimsLimited:      "claims_limited",
	JobsRefused:        "jobs_refused",
	RepeatsHeld:        "repeats_held",
	JobsReleased:       "jobs_released",
}
