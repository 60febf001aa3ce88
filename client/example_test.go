package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
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

// ExampleClient enqueues a job and publishes an envelope on the server at
// 127.0.0.1:6379, natively when it has the module.
func ExampleClient() {
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		panic(err)
	}
	defer vk.Close()
	c := client.New(vk)
	minter, err := ids.NewMinter(1)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	admitted, err := c.Enqueue(ctx, "orders", minter.Mint(ids.Job), []byte(`{"sku":42}`))
	fmt.Println(admitted, err)

	_, err = c.Enqueue(ctx, "orders", minter.Mint(ids.Msg), nil)
	fmt.Println(errors.Is(err, emqerrors.Kind)) // a MSG id is no job id

	sid, err := c.Publish(ctx, "orders", client.Envelope{
		ID: minter.Mint(ids.Evt), Msg: minter.Mint(ids.Msg), Payload: []byte("hello"),
	})
	fmt.Println(sid, err)
}
