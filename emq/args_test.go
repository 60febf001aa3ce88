package emq

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
)

func TestParseInt(t *testing.T) {
	cases := []string{
		"0", "1", "-1", "9", "10", "123", "-123",
		"9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "18446744073709551616",
		"", "-", "+1", "+0", "01", "-01", "00", "-0", " 1", "1 ", "1.0", "1e3", "0x10", "12a", "\x00", "1\x00", "١",
	}
	for _, in := range cases {
		t.Run(strconv.Quote(in), func(t *testing.T) {
			got, ok := ParseInt([]byte(in))
			// The server's integers are exactly the canonical decimal forms.
			want, err := strconv.ParseInt(in, 10, 64)
			canonical := err == nil && strconv.FormatInt(want, 10) == in
			require.Equal(t, canonical, ok)
			if ok {
				assert.Equal(t, want, got)
			}
		})
	}
}

func TestPositive(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"0", 0, false},
		{"-1", 0, false},
		{"abc", 0, false},
		{"01", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := positive([]byte(c.in))
			require.Equal(t, c.ok, ok)
			if ok {
				assert.Equal(t, c.want, got)
			}
		})
	}
}

func TestNumkeys(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"2", true}, {"1", false}, {"3", false}, {"02", false}, {"+2", false}, {" 2", false}, {"-2", false}, {"", false},
	}
	for _, c := range cases {
		t.Run(strconv.Quote(c.in), func(t *testing.T) {
			err := numkeys([][]byte{[]byte("EMQ.ENQUEUE"), []byte(c.in)}, 2)
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.Equal(t, &errors.Refusal{Code: errors.Shape, Msg: "numkeys must be 2"}, err)
		})
	}
}
