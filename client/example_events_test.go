package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/emq/client"
)

// ExampleQueue_Events tails a queue's lifecycle events, resuming after
// the last one a previous run handled, and prints each job that died: by a
// failure of its last attempt, or at a claim once its attempts were spent
// (its last lease passed).
func ExampleQueue_Events() {
	q := exampleQueue("alerts", client.Policy{MaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := q.SetEvents(ctx, 1000); err != nil { // on from here
		panic(err)
	}
	dying, err := q.Enqueue(ctx, []byte("to: nobody@example.com"))
	if err != nil {
		panic(err)
	}
	jobs, err := q.Claim(ctx, 1)
	if err != nil || len(jobs) != 1 {
		panic(fmt.Sprint(jobs, err))
	}
	if _, err := jobs[0].Fail(ctx, errors.New("550 no such user")); err != nil { // its one attempt spent
		panic(err)
	}

	last := "0" // or the ID a previous run saved
	for ev, err := range q.Events(ctx, last) {
		if err != nil {
			fmt.Println(err)
			continue // a refusal ends the sequence; anything else is read again
		}
		last = ev.ID.String()
		switch {
		case ev.Name == client.EventFailed && ev.State == client.StateDead, ev.Name == client.EventDead:
			fmt.Println("dead:", ev.Job == dying, ev.Error)
			cancel() // here, to end the example; a program tails on
		}
	}
	// Output:
	// dead: true 550 no such user
}

// ExampleQueue_Repeat makes a report job every weekday at 07:30 in Paris,
// and lists the queue's schedules.
func ExampleQueue_Repeat() {
	q := exampleQueue("digests", client.Policy{})
	ctx := context.Background()

	first, err := q.Repeat(ctx, "morning", "30 7 * * 1-5", []byte(`{"report":"sales"}`),
		client.RepeatOptions{TZ: "Europe/Paris"})
	if err != nil {
		panic(err)
	}
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	at := first.In(paris)
	fmt.Println(at.Format("15:04"), at.Weekday() != time.Saturday && at.Weekday() != time.Sunday)

	schedules, err := q.Schedules(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range schedules {
		fmt.Println(s.Name, s.Spec, s.TZ, s.Made, s.Next.Equal(first))
	}
	// Output:
	// 07:30 true
	// morning 30 7 * * 1-5 Europe/Paris 0 true
}
