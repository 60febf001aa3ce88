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

func TestWorkerProducesAndConsumes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noModule bool
	}{
		{"with the module the worker runs the native verbs", false},
		{"without the module the worker falls back to built-ins", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valkeytest.Start(t, valkeytest.Options{NoModule: tc.noModule})
			cfg := config{addr: s.Addr, role: "both", queue: "orders", topic: "orders", group: "workers",
				jobs: 7, node: 1, failTTL: time.Minute, idle: 100 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out bytes.Buffer
			sum, err := run(ctx, cfg, &out)
			require.NoError(t, err, out.String())

			assert.Equal(t, summary{admitted: 7, published: 7, consumed: 7, failures: 3}, sum, "payloads 0, 3 and 6 fail once")
			assert.Contains(t, out.String(), "admitted 7, published 7, consumed 7, failures counted 3")
			pending, err := s.Do("ZCARD", keys.Pending("orders")).AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(7), pending)
			unacked, err := s.Do("XPENDING", keys.Stream("orders", "msgs"), "workers").ToArray()
			require.NoError(t, err)
			n, err := unacked[0].AsInt64()
			require.NoError(t, err)
			assert.Zero(t, n, "every message is acknowledged")
			fails, err := s.Do("KEYS", "emq:{orders}:fail:*").AsStrSlice()
			require.NoError(t, err)
			assert.Len(t, fails, 3)
			if !tc.noModule {
				assert.Equal(t, "7", s.InfoField("emq", "emq_calls_publish"))
				assert.Equal(t, "3", s.InfoField("emq", "emq_failures_counted"))
			}

			out.Reset()
			cfg.role = "consumer"
			sum, err = run(ctx, cfg, &out)
			require.NoError(t, err)
			assert.Equal(t, summary{}, sum, "a second consumer finds the stream drained")
		})
	}
}
