package errors_test

import (
	stderrors "errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/echomq/emq/errors"
)

func TestCodesRoundTripThroughTheirWireNames(t *testing.T) {
	for _, c := range errors.Codes {
		t.Run(c.String(), func(t *testing.T) {
			got, ok := errors.ParseCode(c.String())
			assert.True(t, ok)
			assert.Equal(t, c, got)
		})
	}
	t.Run("an unknown word is no code", func(t *testing.T) {
		_, ok := errors.ParseCode("EMQNOPE")
		assert.False(t, ok)
	})
	t.Run("a code out of range names itself", func(t *testing.T) {
		assert.Equal(t, "Code(99)", errors.Code(99).String())
	})
}

func TestRefusalMatchesItsCode(t *testing.T) {
	err := fmt.Errorf("enqueue: %w", errors.New(errors.Kind, "job id must be JOB-namespaced"))
	assert.True(t, stderrors.Is(err, errors.Kind))
	assert.False(t, stderrors.Is(err, errors.Shape))
	assert.Equal(t, "enqueue: EMQKIND job id must be JOB-namespaced", err.Error())
	var r *errors.Refusal
	assert.True(t, stderrors.As(err, &r))
	assert.Equal(t, errors.Kind, errors.CodeOf(r))
	assert.Equal(t, errors.Kind, errors.CodeOf(err), "a wrapped refusal keeps its code")
	assert.Equal(t, errors.Code(0), errors.CodeOf(stderrors.New("plain")))

	// a refusal read off the wire matches the sentinel of its code
	wrong := fmt.Errorf("enqueue: %w", &errors.Refusal{Code: errors.WrongType, Msg: "Operation against a key holding the wrong kind of value"})
	assert.True(t, stderrors.Is(wrong, errors.ErrWrongType))
	assert.True(t, stderrors.Is(wrong, errors.WrongType))
	assert.False(t, stderrors.Is(err, errors.ErrWrongType))
}

func ExampleRefusal() {
	err := errors.New(errors.Order, "entry %d: %s is not above the stream top %s", 3, "1718000000000-5", "1718000000000-9")
	fmt.Println(err)
	fmt.Println(stderrors.Is(err, errors.Order))
	// Output:
	// EMQORDER entry 3: 1718000000000-5 is not above the stream top 1718000000000-9
	// true
}
