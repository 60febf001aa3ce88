package valkeytest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSchedstat(t *testing.T) {
	tests := []struct {
		name, text string
		want       Schedstat
		wantErr    string
	}{
		{"run and wait times are the first two fields", "123456 789 42\n", Schedstat{Run: 123456, Wait: 789}, ""},
		{"a file of one field is refused", "123456\n", Schedstat{}, "has no run and wait times"},
		{"a field that is no number is refused", "123456 x 42\n", Schedstat{}, "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/schedstat"
			require.NoError(t, os.WriteFile(path, []byte(tt.text), 0o644))
			got, err := ReadSchedstat(path)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("a thread that ended is an error that says so", func(t *testing.T) {
		_, err := ReadSchedstat(t.TempDir() + "/gone/schedstat")
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("the span between two readings subtracts each field", func(t *testing.T) {
		assert.Equal(t, Schedstat{Run: 30, Wait: 4}, Schedstat{Run: 130, Wait: 9}.Minus(Schedstat{Run: 100, Wait: 5}))
	})
}
