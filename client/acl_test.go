package client

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// workerUser is the rules docs/commands.md gives a user of the Go client:
// its ACL SETUSER line after the password, as serverRules adapts them.
func workerUser(t *testing.T, s *valkeytest.Server) []string {
	t.Helper()
	return serverRules(t, s, docRules(t, "    ACL SETUSER worker on >secret "))
}

// serverRules are rules as the docs adapt them to Redis 7.0: @emq, which
// it lacks, is every verb by name, and CLIENT SETINFO and WAITAOF, which
// came with 7.2, are left out.
func serverRules(t *testing.T, s *valkeytest.Server, rules []string) []string {
	t.Helper()
	var out []string
	for _, r := range rules {
		switch {
		case r == "+@emq" && !s.Product().ModuleACLCategories():
			verbs, err := s.VerbGrant()
			require.NoError(t, err)
			out = append(out, verbs...)
		case (r == "+client|setinfo" || r == "+waitaof") && s.Product().Before("redis", 7, 2):
		default:
			out = append(out, r)
		}
	}
	return out
}

// docRules are the rules of the first line of docs/commands.md that
// starts so — an ACL SETUSER line — from line's last word on.
func docRules(t *testing.T, line string) []string {
	t.Helper()
	doc, err := os.ReadFile("../docs/commands.md")
	require.NoError(t, err)
	i := strings.Index(string(doc), line)
	require.GreaterOrEqual(t, i, 0, "docs/commands.md has no %q", line)
	text, _, _ := strings.Cut(string(doc[i+strings.LastIndex(line, " ")+1:]), "\n")
	return strings.Fields(text)
}

// TestTheDocumentedWorkerUser: a valkey-go client built as the docs build
// it, logged in as the user docs/commands.md gives, enqueues and works a
// queue — a job enqueued while Work waits idle is handled, the stop ends
// the waiting claim at once — and, with the grants the docs add for them,
// reads a job, the events (alone and in a group) and waits for its writes'
// copies, on a server and on a cluster; the server refuses it nothing (its
// ACL LOG stays empty).
func TestTheDocumentedWorkerUser(t *testing.T) {
	aof := valkeytest.Options{Config: []string{"appendonly", "yes"}} // WAITAOF's
	one := valkeytest.Start(t, aof)
	cl := valkeytest.StartCluster(t, 3, 0, aof)
	for _, target := range []struct {
		name  string
		nodes []*valkeytest.Server
	}{{"a server", []*valkeytest.Server{one}}, {"a cluster", cl.Primaries}} {
		t.Run(target.name, func(t *testing.T) {
			vk, err := loggedIn(t, target.nodes, "worker", workerUser(t, target.nodes[0])...)
			require.NoError(t, err)
			m, err := ids.NewMinter(11)
			require.NoError(t, err)
			q, err := New(vk).Queue("granted", m, Policy{Lease: 5 * time.Second})
			require.NoError(t, err)

			handled := make(chan string, 1)
			wctx, cancel := context.WithCancel(context.Background())
			var werr error
			var wg sync.WaitGroup
			wg.Go(func() {
				werr = q.Work(wctx, func(_ context.Context, j *Job) error {
					handled <- string(j.Payload)
					return nil
				}, WorkOptions{Poll: 5 * time.Second})
			})
			time.Sleep(300 * time.Millisecond) // Work claims nothing and waits
			_, err = q.Enqueue(ctx(t), []byte("while it waits"))
			require.NoError(t, err)
			select {
			case p := <-handled:
				assert.Equal(t, "while it waits", p)
			case <-time.After(3 * time.Second):
				t.Error("the job enqueued while Work waited was not handled")
			}
			time.Sleep(200 * time.Millisecond) // waiting again
			stopped := time.Now()
			cancel()
			wg.Wait()
			require.NoError(t, werr)
			assert.Less(t, time.Since(stopped), 2*time.Second, "the stop ended the waiting claim (closing its connection)")

			more := serverRules(t, target.nodes[0], docRules(t, "    ACL SETUSER worker +"))
			for _, n := range target.nodes {
				require.NoError(t, n.Do(append([]string{"ACL", "SETUSER", "worker"}, more...)...).Error())
			}
			kept, err := New(vk).Queue("kept", m, Policy{Keep: time.Minute})
			require.NoError(t, err)
			_, err = kept.SetEvents(ctx(t), 100)
			require.NoError(t, err)
			id, err := kept.Enqueue(ctx(t), []byte("read me"))
			require.NoError(t, err)
			info, err := kept.Job(ctx(t), id)
			require.NoError(t, err, "Queue.Job")
			assert.Equal(t, StatePending, info.State)
			for _, from := range []string{"0", "$"} {
				ectx, stop := context.WithTimeout(ctx(t), 300*time.Millisecond)
				for ev, err := range kept.Events(ectx, from) {
					require.NoError(t, err, "Queue.Events from %s", from)
					assert.Equal(t, EventAdded, ev.Name)
					break
				}
				stop()
			}
			for ev, err := range kept.EventGroup(ctx(t), "g", "c", GroupOptions{From: "0"}) {
				require.NoError(t, err, "Queue.EventGroup")
				assert.Equal(t, EventAdded, ev.Name)
				break
			}
			if !target.nodes[0].Product().Before("redis", 7, 2) { // WAITAOF came with 7.2
				durable, err := New(vk).Queue("durable", m, Policy{Durability: Durability{AOF: true}})
				require.NoError(t, err)
				_, err = durable.Enqueue(ctx(t), []byte("fsynced"))
				require.NoError(t, err, "WAITAOF")
			}
			copied, err := New(vk).Queue("copied", m, Policy{Durability: Durability{Replicas: 1, Timeout: 50 * time.Millisecond}})
			require.NoError(t, err)
			_, err = copied.Enqueue(ctx(t), []byte("no replica"))
			require.ErrorIs(t, err, ErrNotDurable, "WAIT ran, and no replica confirmed")
			assert.NotContains(t, err.Error(), "NOPERM")
			for _, n := range target.nodes {
				assert.Empty(t, n.ACLLog(t), "%s refused the documented user", n.Addr)
			}
		})
	}
	t.Run("a cluster's user not granted CLUSTER SLOTS is refused NOPERM, and Work stops", func(t *testing.T) {
		// the client reads the slot map itself, to ask each node which
		// verbs it serves: refused, nothing is sent — no unknown outcome —
		// and Work does not claim nothing for ever, saying nothing
		vk, err := loggedIn(t, cl.Primaries, "noslots", append(workerUser(t, cl.Primaries[0]), "-cluster|slots")...)
		if cl.Primaries[0].Product().Before("redis", 7, 2) {
			// valkey-go reads the slot map with it there: no client at all
			require.ErrorContains(t, err, "NOPERM")
			require.ErrorContains(t, err, "cluster|slots")
			return
		}
		require.NoError(t, err)
		m, err := ids.NewMinter(13)
		require.NoError(t, err)
		q, err := New(vk).Queue("noslots", m, Policy{})
		require.NoError(t, err)
		_, err = q.Enqueue(ctx(t), []byte("p"))
		requireRefusal(t, err, emqerrors.NoPerm)
		assert.NotErrorIs(t, err, ErrUnknownOutcome)
		workStopsRefused(t, q)
	})
}

// loggedIn makes user, with rules, on every node and returns a valkey-go
// client of them logged in as it, built as the docs build one (valkey-go's
// defaults), closed when the test ends — or the client's error.
func loggedIn(t *testing.T, nodes []*valkeytest.Server, user string, rules ...string) (valkey.Client, error) {
	t.Helper()
	var seeds []string
	for _, n := range nodes {
		require.NoError(t, n.Do(append([]string{"ACL", "SETUSER", user, "on", ">secret"}, rules...)...).Error())
		seeds = append(seeds, n.Addr)
	}
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: seeds, Username: user, Password: "secret"})
	if err == nil {
		t.Cleanup(vk.Close)
	}
	return vk, err
}

// workStopsRefused requires Work on q to stop with a NOPERM refusal,
// soon, rather than retry it for ever.
func workStopsRefused(t *testing.T, q *Queue) {
	t.Helper()
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	err := q.Work(wctx, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: 50 * time.Millisecond})
	requireRefusal(t, err, emqerrors.NoPerm)
	assert.Less(t, time.Since(began), 10*time.Second, "Work retried the refusal")
}

// TestWorkNeedsNoClientIDNorUnblock: Work's stop ends its waiting claim
// by closing the claim's connection, so a user granted neither CLIENT ID
// nor CLIENT UNBLOCK works a queue, waits on it and stops at once, and
// the server logs no denial. (Before, the blocking claim asked its
// connection's id and the stop sent CLIENT UNBLOCK … ERROR; Work stopped
// with CLIENT ID's NOPERM as the queue first ran dry.)
func TestWorkNeedsNoClientIDNorUnblock(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(12)
	require.NoError(t, err)
	vk := s.ClientAs(t, "noid", "+@all", "-client|id", "-client|unblock", "~*")
	q, err := New(vk).Queue("noid", m, Policy{})
	require.NoError(t, err)
	ran := make(chan ids.ID, 1)
	stop := working(t, q, func(_ context.Context, j *Job) error { ran <- j.ID; return nil }, WorkOptions{Poll: time.Minute})
	eventually(t, "the worker waits", func() bool { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1 })
	id, err := q.Enqueue(ctx(t), []byte("p"))
	require.NoError(t, err)
	require.Equal(t, id, within(t, ran, 10*time.Second, "the job"))
	eventually(t, "the worker waits again", func() bool { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1 })
	began := time.Now()
	require.NoError(t, stop())
	assert.Less(t, time.Since(began), 5*time.Second, "the stop ends the wait, not Poll")
	eventually(t, "no waiter left", func() bool { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 0 })
	denials, err := s.Do("ACL", "LOG").ToArray()
	require.NoError(t, err)
	assert.Empty(t, denials)
}
