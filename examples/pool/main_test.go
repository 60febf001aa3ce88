package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoolRetriesKillsAndRevives(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noModule bool
	}{
		{"with the module the pool runs the native verbs", false},
		{"without the module the pool runs the verbs' scripts", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valkeytest.Start(t, valkeytest.Options{NoModule: tc.noModule})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out bytes.Buffer
			cfg := config{addr: s.Addr, queue: "emails", jobs: 10, workers: 4, node: 1}
			require.NoError(t, run(ctx, cfg, &out), out.String())

			dead, err := s.Do("ZRANGE", keys.Set("emails", "dead"), "0", "-1").AsStrSlice()
			require.NoError(t, err)
			require.Len(t, dead, 1, "the unsaveable job is left dead")
			lost := dead[0]
			native := "true"
			if tc.noModule {
				native = "false"
			}
			assert.Equal(t, "native verbs: "+native+`
enqueued 10 jobs, 1 poison job and 1 unsaveable job in one pipeline
handled 10 jobs, 4 of them retried once
poison job: dead after 3 attempts (cannot parse the poison payload)
revived the poison job; the handler is fixed
poison job handled on attempt 4 after its revival
poison attempts: 1 2 3 4
left job `+lost+` dead (no fix saves it): see it with go run ./cmd/emq --addr `+s.Addr+` jobs emails --state dead, or go run ./cmd/emq --addr `+s.Addr+` dash
`, out.String())
			for _, set := range []string{"pending", "active", "delayed"} {
				n, err := s.Do("EXISTS", keys.Set("emails", set)).AsInt64()
				require.NoError(t, err)
				assert.Zero(t, n, set)
			}
			row, err := s.Do("HMGET", keys.Job("emails", lost), "payload", "error").AsStrSlice()
			require.NoError(t, err)
			assert.Equal(t, []string{unsaveable, "550 no such mailbox"}, row)
		})
	}
}
