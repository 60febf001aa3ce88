package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Example_keys shows the keys the verbs write for a queue and a topic: the
// name is the hash tag, so one call's keys share a cluster slot.
func Example_keys() {
	job, _ := ids.New(ids.Job, 1000, 3, 0)
	sub, _ := ids.New(ids.Sub, 1000, 3, 1)
	msg, _ := ids.New(ids.Msg, 1000, 3, 2)
	fmt.Println(keys.Job("orders", job.String()))
	fmt.Println(keys.Pending("orders"))
	fmt.Println(keys.Stream("orders", "msgs"))
	fmt.Println(keys.Fail("orders", sub.String(), msg.String()))
	// Output:
	// emq:{orders}:job:JOB00000000fa003000
	// emq:{orders}:pending
	// emq:{orders}:stream:msgs
	// emq:{orders}:fail:SUB00000000fa003001:MSG00000000fa003002
}

// ExampleEntry shows the stream IDs Append returns for a batch: each
// entry's EVT id mapped to <ms>-<node and sequence>, in mint order.
func ExampleEntry() {
	var batch []client.Entry
	for seq := uint32(0); seq < 3; seq++ {
		id, _ := ids.New(ids.Evt, 86_400_000, 1, seq) // one day after the EMQ epoch
		batch = append(batch, client.Entry{ID: id, Fields: []client.Field{{Name: "n", Value: fmt.Sprint(seq)}}})
	}
	for _, e := range batch {
		fmt.Println(e.ID, e.ID.StreamID())
	}
	// Output:
	// EVT0001499700001000 1704153600000-4096
	// EVT0001499700001001 1704153600000-4097
	// EVT0001499700001002 1704153600000-4098
}

// ExampleClient enqueues a job and publishes an envelope, natively when
// the server has the module.
func ExampleClient() {
	c := client.New(exampleValkey())
	minter, err := ids.NewMinter(1)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	job := minter.Mint(ids.Job)
	admitted, err := c.Enqueue(ctx, "orders", job, []byte(`{"sku":42}`))
	fmt.Println(admitted, err)
	admitted, err = c.Enqueue(ctx, "orders", job, []byte(`{"sku":42}`))
	fmt.Println(admitted, err) // the job exists: sent again, it is not admitted twice

	_, err = c.Enqueue(ctx, "orders", minter.Mint(ids.Msg), nil)
	fmt.Println(errors.Is(err, emqerrors.Kind)) // a MSG id is no job id

	evt := minter.Mint(ids.Evt)
	sid, err := c.Publish(ctx, "orders", client.Envelope{
		ID: evt, Msg: minter.Mint(ids.Msg), Payload: []byte("hello"),
	})
	fmt.Println(sid == evt.StreamID(), err) // the entry's stream ID is its EVT id's
	// Output:
	// true <nil>
	// false <nil>
	// true
	// true <nil>
}

// The server the runnable examples use: started with the module on the
// first example that asks, stopped when the tests end.
var (
	exampleOnce   sync.Once
	exampleServer *valkeytest.Server
	exampleErr    error
)

// TestMain stops the examples' server once every test and example ran —
// or makes this binary a worker process of TestClusterFailover.
func TestMain(m *testing.M) {
	if code, worker := client.FailoverWorkerMain(); worker {
		os.Exit(code)
	}
	code := m.Run()
	if exampleServer != nil {
		exampleServer.Stop()
	}
	os.Exit(code)
}

// exampleValkey is a valkey-go client of the examples' server, as a
// program makes one with
// valkey.NewClient(valkey.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}).
func exampleValkey() valkey.Client {
	exampleOnce.Do(func() { exampleServer, exampleErr = valkeytest.Launch(valkeytest.Options{}) })
	if exampleErr != nil {
		panic(exampleErr)
	}
	return exampleServer.Client()
}

// exampleQueue is a handle on a new queue of the examples' server.
func exampleQueue(name string, p client.Policy) *client.Queue {
	minter, err := ids.NewMinter(9)
	if err != nil {
		panic(err)
	}
	q, err := client.New(exampleValkey()).Queue(name, minter, p)
	if err != nil {
		panic(err)
	}
	return q
}

// ExampleQueue_Enqueue admits a job and claims it.
func ExampleQueue_Enqueue() {
	ctx := context.Background()
	q := exampleQueue("emails", client.Policy{Lease: 30 * time.Second})

	if _, err := q.Enqueue(ctx, []byte("hello")); err != nil {
		panic(err)
	}
	jobs, err := q.Claim(ctx, 10)
	if err != nil {
		panic(err)
	}
	for _, j := range jobs {
		fmt.Printf("%s, attempt %d\n", j.Payload, j.Attempt)
		if err := j.Ack(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// hello, attempt 1
}

// ExamplePriority admits jobs at a time and at priorities: claims take the
// lowest priority first, and a job due later waits in the delayed set.
func ExamplePriority() {
	ctx := context.Background()
	q := exampleQueue("reports", client.Policy{})

	for _, job := range []struct {
		payload  string
		priority int
	}{{"weekly", 5}, {"urgent", 0}, {"daily", 5}} {
		if _, err := q.Enqueue(ctx, []byte(job.payload), client.Priority(job.priority)); err != nil {
			panic(err)
		}
	}
	tomorrow, err := q.Enqueue(ctx, []byte("tomorrow"), client.At(time.Now().Add(24*time.Hour)), client.Priority(0))
	if err != nil {
		panic(err)
	}
	jobs, err := q.Claim(ctx, 10)
	if err != nil {
		panic(err)
	}
	for _, j := range jobs {
		fmt.Println(string(j.Payload))
	}
	info, err := q.Job(ctx, tomorrow)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.State, time.Until(info.Due).Round(time.Hour))
	// Output:
	// urgent
	// weekly
	// daily
	// delayed 24h0m0s
}

// ExampleQueue_Work runs a worker until its context ends: each job's
// handler returning nil acknowledges it.
func ExampleQueue_Work() {
	q := exampleQueue("thumbnails", client.Policy{Lease: 10 * time.Second})
	ctx, stop := context.WithCancel(context.Background())
	if _, err := q.EnqueueMany(ctx, [][]byte{[]byte("a.png"), []byte("b.png"), []byte("c.png")}); err != nil {
		panic(err)
	}

	done := 0
	err := q.Work(ctx, func(ctx context.Context, j *client.Job) error {
		fmt.Println("resized", string(j.Payload))
		if done++; done == 3 {
			stop() // the worker stops claiming, lets this handler finish, returns
		}
		return nil
	}, client.WorkOptions{Concurrency: 1})
	fmt.Println(err)
	// Output:
	// resized a.png
	// resized b.png
	// resized c.png
	// <nil>
}

// ExampleErrNoRetry fails a job for good: a handler whose error wraps
// ErrNoRetry sends its job to dead at once, the attempts its policy has
// left unused, while a plain error is retried.
func ExampleErrNoRetry() {
	q := exampleQueue("invites", client.Policy{MaxAttempts: 5, Backoff: func(int64) time.Duration { return 0 }})
	ctx, stop := context.WithCancel(context.Background())
	bad, err := q.Enqueue(ctx, []byte("not-an-address"))
	if err != nil {
		panic(err)
	}

	err = q.Work(ctx, func(ctx context.Context, j *client.Job) error {
		stop()
		return fmt.Errorf("invalid address %q: %w", j.Payload, client.ErrNoRetry)
	}, client.WorkOptions{Concurrency: 1})
	fmt.Println(err)
	info, err := q.Job(context.Background(), bad)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s after %d of 5 attempts: %s\n", info.State, info.Attempts, info.Error)
	// Output:
	// <nil>
	// dead after 1 of 5 attempts: invalid address "not-an-address": no retry
}

// ExampleQueue_Pause stops a queue's claims until it is resumed.
func ExampleQueue_Pause() {
	ctx := context.Background()
	q := exampleQueue("payouts", client.Policy{})
	if _, err := q.Enqueue(ctx, []byte("42 EUR")); err != nil {
		panic(err)
	}

	paused, err := q.Pause(ctx)
	if err != nil {
		panic(err)
	}
	jobs, _ := q.Claim(ctx, 1)
	fmt.Println(paused, len(jobs))

	resumed, err := q.Resume(ctx)
	if err != nil {
		panic(err)
	}
	jobs, _ = q.Claim(ctx, 1)
	fmt.Println(resumed, len(jobs))
	// Output:
	// true 0
	// true 1
}

// ExampleJob_AckResult keeps a job's result on its row for the policy's
// Keep, for whoever reads the job.
func ExampleJob_AckResult() {
	ctx := context.Background()
	q := exampleQueue("sums", client.Policy{Keep: time.Hour})
	id, err := q.Enqueue(ctx, []byte("2+2"))
	if err != nil {
		panic(err)
	}
	jobs, err := q.Claim(ctx, 1)
	if err != nil {
		panic(err)
	}
	if err := jobs[0].AckResult(ctx, []byte("4")); err != nil {
		panic(err)
	}

	info, err := q.Job(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.State, string(info.Result))
	// Output:
	// done 4
}

// ExampleJob_Release gives a job back unstarted: pending again, the
// attempt it was claimed under not counted against MaxAttempts.
func ExampleJob_Release() {
	ctx := context.Background()
	q := exampleQueue("exports", client.Policy{MaxAttempts: 1})
	id, err := q.Enqueue(ctx, []byte("report.csv"))
	if err != nil {
		panic(err)
	}
	jobs, err := q.Claim(ctx, 1)
	if err != nil {
		panic(err)
	}
	if err := jobs[0].Release(ctx); err != nil { // say, its disk is full
		panic(err)
	}

	info, err := q.Job(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.State, info.Attempts, info.Attempts-info.Revived)
	jobs, err = q.Claim(ctx, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(jobs[0].Payload), jobs[0].Attempt) // its one attempt, still to run
	// Output:
	// pending 1 0
	// report.csv 2
}
