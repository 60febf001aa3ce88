package verbs

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// wire sends each call on one connection of its own, speaking RESP3 when
// resp3, and returns each reply exactly as the server wrote it.
func wire(t *testing.T, s *valkeytest.Server, resp3 bool, calls ...[]string) []string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	r := bufio.NewReader(conn)
	send := func(args []string) string {
		var req strings.Builder
		fmt.Fprintf(&req, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
		}
		_, err := conn.Write([]byte(req.String()))
		require.NoError(t, err)
		reply, err := readReply(r)
		require.NoError(t, err)
		return reply
	}
	if resp3 {
		send([]string{"HELLO", "3"})
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = send(c)
	}
	return out
}

// readReply reads one whole reply and returns its bytes.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(line[1:], "\r\n"))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		body := make([]byte, n+2)
		_, err := io.ReadFull(r, body)
		return line + string(body), err
	case '*', '%', '~', '>':
		if line[0] == '%' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			more, err := readReply(r)
			line += more
			if err != nil {
				return line, err
			}
		}
	}
	return line, nil
}

func TestLifecycleRepliesHaveTheDocumentedTypes(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("wire")
	jobs := jobIDs(3)
	for _, resp3 := range []bool{false, true} {
		proto := map[bool]string{false: "RESP2", true: "RESP3"}[resp3]
		t.Run(proto+": a claim replies [bulk id, integer attempt, bulk payload] per job, nil as a null array", func(t *testing.T) {
			flush(t, s)
			must(t, s, q.enqueue(jobs[0], "pay")...)
			got := wire(t, s, resp3, q.claim(longLease, 5, 5), q.claim(longLease, 5, 5))
			require.Equal(t, "*1\r\n*3\r\n$"+itoa(int64(len(jobs[0])))+"\r\n"+jobs[0]+"\r\n:1\r\n$3\r\npay\r\n", got[0])
			require.Equal(t, map[bool]string{false: "*-1\r\n", true: "_\r\n"}[resp3], got[1])
		})
		t.Run(proto+": EXTEND, ACK, STALLED.CHECK and REVIVE reply integers, FAIL a bulk state", func(t *testing.T) {
			flush(t, s)
			for _, j := range jobs {
				must(t, s, q.enqueue(j, "p")...)
			}
			claimJobs(t, s, q.claim(longLease, 3, 1)...)
			got := wire(t, s, resp3,
				q.extend(jobs[0], 1, longLease), q.ack(jobs[0], 1, 0),
				q.fail(jobs[1], 1, 0, 1, "e"), q.revive(jobs[1]), q.stalledCheck(10))
			require.Regexp(t, `^:\d{13}\r\n$`, got[0])
			require.Equal(t, []string{":1\r\n", "$4\r\ndead\r\n", ":1\r\n", ":0\r\n"}, got[1:])
			claimJobs(t, s, q.claim(longLease, 1, 5)...)
			got = wire(t, s, resp3, q.fail(jobs[1], 2, 0, 5, "e"), q.fail(jobs[2], 1, 10, 5, "e")) // the revived job, claimed again
			require.Equal(t, []string{"$7\r\npending\r\n", "$7\r\ndelayed\r\n"}, got)
		})
		t.Run(proto+": CAPS and each schedule of REPEATS are field/value pairs in a flat array, never a map", func(t *testing.T) {
			flush(t, s)
			must(t, s, q.repeat("hourly", "@every 1h", "", "p", 0, 0, 0, 0)...)
			got := wire(t, s, resp3, []string{"EMQ.CAPS"}, []string{"EMQ.REPEATS", "1", keys.Set(q.name, keys.Repeats)})
			require.True(t, strings.HasPrefix(got[0], "*4\r\n$7\r\nversion\r\n$5\r\n0.3.0\r\n$4\r\ncaps\r\n*"), got[0])
			require.True(t, strings.HasPrefix(got[1], "*1\r\n*24\r\n$4\r\nname\r\n$6\r\nhourly\r\n$4\r\nspec\r\n"), got[1])
		})
	}
}
