package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestABulkRevivalLongerThanTheWriteTimeoutStillAnswers: emq dash serves
// with a write timeout (a minute), and a bulk revival of a big dead set —
// not bounded, as OPERATIONS.md says — may run longer. Its answer, the
// redirect carrying what it did, must still reach the browser: before, the
// connection's write deadline had passed when the action ended, and the
// browser got an empty reply, not a word of what was revived.
func TestABulkRevivalLongerThanTheWriteTimeoutStillAnswers(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Dead(t, s.Client(), "slow", 20)
	cfg := Config{Write: true, Logger: slog.New(slog.DiscardHandler)}
	cfg.Inspector = inspect.New(s.Client(), inspect.Options{Now: func() time.Time { return queuetest.Now }})
	cfg.Client = client.New(s.Client())
	d, err := New(cfg)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(d)
	srv.Config.WriteTimeout = 500 * time.Millisecond // emq dash's is a minute
	srv.Start()
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	w := &site{url: srv.URL, d: d, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	token := w.token(t, "/queues/slow?state=dead")

	// the revivals wait out a pause of the server's writes: the action
	// takes longer than the write timeout
	require.NoError(t, s.Do("CLIENT", "PAUSE", "1500", "WRITE").Error())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url+"/queues/slow/revive-dead",
		strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := w.hc.Do(req)
	require.NoError(t, err, "the browser gets an answer, not an empty reply")
	defer resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Location"), "Revived+20+of+20+dead+jobs")
	assert.Zero(t, zcard(t, s, "slow", "dead"))
}
