package test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestModuleLoadsAndAdmitsAJob(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	got, err := s.Do("EMQ.ENQUEUE", "2", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "JOB0018f2a4c1e00001", "hello").AsInt64()
	require.NoError(t, err)
	require.Equal(t, int64(1), got)
}
