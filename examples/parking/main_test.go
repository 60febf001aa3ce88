package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConsumerParksThePoison(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noModule bool
	}{
		{"with the module", false},
		{"without the module the park runs as its script", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valkeytest.Start(t, valkeytest.Options{NoModule: tc.noModule})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 2 { // a second run on the same server reports its own poison
				var out bytes.Buffer
				cfg := config{addr: s.Addr, topic: "payments", messages: 4, maxFailures: 3, node: 1}
				require.NoError(t, run(ctx, cfg, &out), "run %d: %s", i+1, out.String())
				// native park: is false until the module serves EMQ.PARK.
				_, rest, _ := bytes.Cut(out.Bytes(), []byte("\n"))
				assert.Equal(t, `published 4 messages and 1 poison message
handled 4 messages; the poison failed 3 times and was parked
dead letter: payload "poison", failures 3, reason "the payment was declined", from msgs of group billing
entries left unacknowledged: 0
`, string(rest), "run %d", i+1)
			}
		})
	}
}
