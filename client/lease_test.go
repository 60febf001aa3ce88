package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandlerContext: a handler's context is made only when looked at,
// and ends with its cause whichever comes first.
func TestHandlerContext(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	t.Run("ended before it is looked at, it is born ended with the cause", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		assert.NoError(t, c.Err())
		c.end(&ErrLeaseLost)
		assert.ErrorIs(t, c.Err(), context.Canceled)
		select {
		case <-c.Done():
		default:
			t.Fatal("Done is not closed")
		}
		assert.ErrorIs(t, context.Cause(c), ErrLeaseLost)
	})
	t.Run("looked at first, it ends with the cause", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		done := c.Done()
		child, cancel := context.WithTimeout(c, time.Hour)
		defer cancel()
		c.end(&ErrShutdown)
		<-done
		<-child.Done()
		assert.ErrorIs(t, context.Cause(c), ErrShutdown)
		assert.ErrorIs(t, context.Cause(child), ErrShutdown, "a context derived from it ends with it")
	})
	t.Run("the first cause stays", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		c.end(&ErrLeaseLost)
		c.end(&context.Canceled)
		assert.ErrorIs(t, context.Cause(c), ErrLeaseLost)
	})
	t.Run("it carries the parent's values and no deadline", func(t *testing.T) {
		c := &handlerContext{parent: parent}
		assert.Equal(t, "v", c.Value(key{}))
		_, ok := c.Deadline()
		assert.False(t, ok)
	})
	t.Run("one never looked at allocates nothing", func(t *testing.T) {
		var hj heldJob
		allocs := testing.AllocsPerRun(100, func() {
			hj.ctx = handlerContext{parent: parent}
			_ = hj.ctx.Err()
			hj.ctx.end(&context.Canceled)
		})
		require.Zero(t, allocs)
	})
}
