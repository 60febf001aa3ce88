package client

import (
	"context"
	"strconv"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// AckResult finishes the job as Ack does and keeps result on its row,
// state done, for the policy's Keep; [Queue.Job] reads it back. An empty
// result (nil too) is kept as one: [JobInfo].Result is then empty, not
// nil as after Ack. A policy whose Keep is 0 deletes the row on ack, so
// there a result — an empty one too — is refused with EMQSHAPE and
// nothing is written.
func (j *Job) AckResult(ctx context.Context, result []byte) error {
	_, err := runVerb(ctx, j.q.c, verbCall{verb: emq.Ack, cp: CapAck,
		keys:   []string{keys.Job(j.q.name, j.ID.String()), j.q.active},
		args:   []string{strconv.FormatInt(j.Attempt, 10), millis(j.q.policy.Keep), valkey.BinaryString(result)},
		script: j.q.c.scripts.ack}, intReply)
	return j.settled(err)
}
