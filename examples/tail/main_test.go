package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTailPrintsTheEvents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noModule bool
	}{
		{"with the module", false},
		{"without the module the verbs' scripts append the events", true},
	} {
		t.Run(tc.name, func(t *testing.T) { tailPrints(t, tc.noModule) })
	}
}

func tailPrints(t *testing.T, noModule bool) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: noModule})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a tail from now that turns the events on, stopped by its deadline:
	// time enough for the turning on on a loaded machine (make compat ran
	// it past 100 ms)
	on, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	require.NoError(t, run(on, config{addr: s.Addr, queue: "emails", from: "$", events: 1000}, io.Discard))
	capacity, err := s.Do("HGET", keys.Set("emails", keys.Config), "events").ToString()
	require.NoError(t, err)
	require.Equal(t, "1000", capacity, "-events turns them on")

	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("emails", m, client.Policy{})
	require.NoError(t, err)
	first, err := q.Enqueue(ctx, []byte("a"))
	require.NoError(t, err)
	second, err := q.Enqueue(ctx, []byte("b"))
	require.NoError(t, err)
	jobs, err := q.Claim(ctx, 2)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.NoError(t, jobs[0].Ack(ctx))
	_, err = jobs[1].FailAfter(ctx, errors.New("smtp timeout"), 0)
	require.NoError(t, err)

	want := `<ID> added job=<first> attempt=0 priority=0
<ID> added job=<second> attempt=0 priority=0
<ID> claimed job=<first> attempt=1 lease=<time>
<ID> claimed job=<second> attempt=1 lease=<time>
<ID> completed job=<first> attempt=1 result_size=0
<ID> failed job=<second> attempt=1 state=pending error="smtp timeout"
`
	streamID := regexp.MustCompile(`(?m)^\d+-\d+ `)
	stamp := regexp.MustCompile(`=\d{4}-\d\d-\d\dT[0-9:.]+Z`)
	for _, tc := range []struct {
		name string
		cfg  config
	}{
		{"a tail from 0 prints every event in the stream", config{addr: s.Addr, queue: "emails", from: "0", n: 6}},
		{"a group's consumer prints them too", config{addr: s.Addr, queue: "emails", from: "0", n: 6, group: "audit", consumer: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(ctx, tc.cfg, &out))
			got := streamID.ReplaceAllString(out.String(), "<ID> ")
			got = stamp.ReplaceAllString(got, "=<time>")
			got = regexp.MustCompile(first.String()).ReplaceAllString(got, "<first>")
			got = regexp.MustCompile(second.String()).ReplaceAllString(got, "<second>")
			assert.Equal(t, want, got)
		})
	}
}
