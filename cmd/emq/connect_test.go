package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// TestCLIConnectionTrouble: what goes wrong while connecting, or on the
// wrong node, ends the run within --timeout with a message saying what to
// do, and a replica's READONLY, or OOM over maxmemory, is a refusal like
// NOPERM.
func TestCLIConnectionTrouble(t *testing.T) {
	t.Run("a host that accepts and never answers gives up within --timeout", func(t *testing.T) {
		addr := fakeHost(t, func(c net.Conn) { t.Cleanup(func() { c.Close() }) })
		start := time.Now()
		r := emq(t, addr, "queues", "--timeout", "1s")
		assert.Equal(t, exitFailed, r.code, r.stderr)
		// valkey-go's own bound is 5 s; a generous bound above the 1 s asked
		assert.Less(t, time.Since(start), 4*time.Second, r.stderr)
	})
	t.Run("a server asking for a password names $EMQ_PASSWORD", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		// set once started: valkeytest's own check of the server has no password
		require.NoError(t, s.Do("CONFIG", "SET", "requirepass", "secret").Error())
		// the serving commands too: a refusal is no server to wait for
		for _, args := range [][]string{{"queues"}, {"metrics", "--listen", "127.0.0.1:0"}, {"dash", "--listen", "127.0.0.1:0"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitFailed, r.code, "%q", args)
			assert.Contains(t, r.stderr, "NOAUTH", "%q", args)
			assert.Contains(t, r.stderr, "$EMQ_PASSWORD", "%q", args)
		}
	})
	t.Run("several standalone --addr are refused as cluster seeds", func(t *testing.T) {
		a, b := valkeytest.Start(t, valkeytest.Options{}), valkeytest.Start(t, valkeytest.Options{})
		r := emq(t, a.Addr, "queues", "--addr", a.Addr+","+b.Addr)
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, "several --addr are cluster seeds; these nodes have cluster support disabled")
	})
	t.Run("a pause on a replica is refused with exit 4 and no note of a new queue", func(t *testing.T) {
		primary := valkeytest.Start(t, valkeytest.Options{})
		replica := valkeytest.StartReplica(t, primary, valkeytest.Options{})
		r := emq(t, replica.Addr, "pause", "emails")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "READONLY")
		assert.Contains(t, r.stderr, "--addr names a replica")
		assert.NotContains(t, r.stderr, "holds no job")
		assert.Empty(t, r.stdout)
	})
	t.Run("an enqueue over maxmemory is refused with exit 4", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		require.NoError(t, s.Do("CONFIG", "SET", "maxmemory", "1").Error())
		r := emq(t, s.Addr, "enqueue", "emails", "hi")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "OOM")
		assert.Empty(t, r.stdout)
	})
	t.Run("an --addr that names no node is bad usage, nothing dialed", func(t *testing.T) {
		for _, addr := range []string{"localhost", "127.0.0.1:", "127.0.0.1:redis", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:6379,"} {
			r := emq(t, "", "queues", "--addr", addr)
			assert.Equal(t, exitUsage, r.code, "%q: %s", addr, r.stderr)
			assert.Contains(t, r.stderr, "want host:port, a port 1 … 65535", addr)
			assert.Contains(t, r.stderr, "\nusage: emq queues (emq help queues)\n", addr)
		}
	})
	t.Run("a user not granted EMQ.CAPS is refused with exit 4", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		require.NoError(t, s.Do("ACL", "SETUSER", "nocaps", "on", "nopass", "+@all", "-emq.caps", "~*").Error())
		r := emq(t, s.Addr, "pause", "emails", "--user", "nocaps")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "NOPERM")
		assert.Empty(t, r.stdout)
	})
	t.Run("a pause of an unknown queue on a primary still notes it", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		r := emq(t, s.Addr, "pause", "emials")
		assert.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stderr, "emials holds no job and has no setting")
	})
}

// fakeHost listens on a loopback port until the test ends, handing each
// connection to conn, and returns its address: a host that is no server.
func fakeHost(t *testing.T, conn func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conn(c)
		}
	}()
	return l.Addr().String()
}

// TestCLITargets: the flags that say how to reach the server — TLS (and a
// client certificate), a unix socket, a database, Sentinel — reach the
// queues there; a target named wrongly is bad usage, and the password typed
// into one is not printed back.
func TestCLITargets(t *testing.T) {
	// enqueued names one job of queue "emails" through target args, and
	// reads back that the queues there are what want says
	enqueued := func(t *testing.T, vars map[string]string, args ...string) {
		t.Helper()
		r := emqEnv(t, vars, queuetest.Now, append([]string{"enqueue", "emails", "hi"}, args...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		r = emqEnv(t, vars, queuetest.Now, append([]string{"queues", "--json"}, args...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"queue": "emails"`)
	}
	t.Run("TLS, verified with --cacert; a client certificate where the server asks for one", func(t *testing.T) {
		pki := newPKI(t)
		for _, mutual := range []string{"no", "yes"} {
			port, err := valkeytest.FreePort()
			require.NoError(t, err)
			tlsAddr := "127.0.0.1:" + strconv.Itoa(port)
			valkeytest.Start(t, valkeytest.Options{Server: "valkey-server", Config: []string{ // Debian's: built with TLS
				"tls-port", strconv.Itoa(port), "tls-cert-file", pki.serverCert, "tls-key-file", pki.serverKey,
				"tls-ca-cert-file", pki.ca, "tls-auth-clients", mutual}})
			vars := map[string]string{"EMQ_ADDR": tlsAddr}
			args := []string{"--tls", "--cacert", pki.ca}
			if mutual == "yes" {
				r := emqEnv(t, vars, queuetest.Now, append([]string{"queues"}, args...)...)
				assert.Equal(t, exitFailed, r.code, "no client certificate: %s", r.stderr)
				args = append(args, "--cert", pki.clientCert, "--key", pki.clientKey)
			}
			enqueued(t, vars, args...)

			r := emqEnv(t, vars, queuetest.Now, "queues", "--timeout", "5s")
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, "does it want TLS? --tls", "plain text to a TLS port")
			if mutual == "yes" {
				r = emqEnv(t, vars, queuetest.Now, "queues", "--tls", "--cacert", pki.ca)
				assert.Equal(t, exitFailed, r.code)
				assert.Contains(t, r.stderr, "does it want a client certificate? --cert, --key")
			}
			r = emqEnv(t, vars, queuetest.Now, "queues", "--tls")
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, "certificate signed by unknown authority", "a CA the system does not know")
			if mutual == "no" {
				r = emqEnv(t, vars, queuetest.Now, "queues", "--insecure")
				assert.Equal(t, exitOK, r.code, "--insecure skips verification: %s", r.stderr)
			}
		}
	})
	t.Run("a unix socket", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "valkey.sock")
		valkeytest.Start(t, valkeytest.Options{Config: []string{"unixsocket", sock}})
		enqueued(t, map[string]string{"EMQ_ADDR": sock})
	})
	t.Run("--db and $EMQ_DB", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		enqueued(t, map[string]string{"EMQ_ADDR": s.Addr}, "--db", "5")
		enqueued(t, map[string]string{"EMQ_ADDR": s.Addr, "EMQ_DB": "5"})
		r := emq(t, s.Addr, "queues", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "emails", "db 0 holds none")
		n, err := s.Do("EVAL", "redis.call('SELECT', 5) return redis.call('ZCARD', KEYS[1])", "1", keys.Pending("emails")).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "both in db 5")
	})
	t.Run("--sentinel: --addr names Sentinels, the primary is theirs", func(t *testing.T) {
		primary := valkeytest.Start(t, valkeytest.Options{})
		sentinel := startSentinel(t, primary, "queues", "")
		enqueued(t, map[string]string{"EMQ_ADDR": sentinel}, "--sentinel", "queues")
		n, err := primary.Do("ZCARD", keys.Pending("emails")).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "on the primary the Sentinel names")
		r := emq(t, sentinel, "queues")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, "--addr names a Sentinel: give --sentinel <name>")
		guarded := startSentinel(t, primary, "queues", "sentinelpw")
		r = emqEnv(t, map[string]string{"EMQ_ADDR": guarded, "EMQ_PASSWORD": "sentinelpw"}, queuetest.Now, "queues", "--sentinel", "queues")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, "a Sentinel's from $EMQ_SENTINEL_PASSWORD")
		r = emqEnv(t, map[string]string{"EMQ_ADDR": guarded, "EMQ_SENTINEL_PASSWORD": "sentinelpw"}, queuetest.Now, "queues", "--sentinel", "queues")
		assert.Equal(t, exitOK, r.code, r.stderr)
	})
	t.Run("bad targets are bad usage, nothing dialed, no password printed back", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			vars map[string]string
			want string
		}{
			{[]string{"--addr", "redis://:S3cret@127.0.0.1:6379/2"}, nil, `--addr "redis://…@127.0.0.1:6379/2": want host:port, not a URL`},
			{[]string{"--addr", "ann:S3cret@127.0.0.1:6379"}, nil, `--addr "…@127.0.0.1:6379": want host:port`},
			{[]string{"--addr", "S3cret@127.0.0.1:6379"}, nil, `--addr "…@127.0.0.1:6379": want host:port`},
			{[]string{"--addr", "127.0.0.1:6380,S3cret@127.0.0.1:6379"}, nil, `--addr "…@127.0.0.1:6379": want host:port`},
			{[]string{"--addr", "redis://127.0.0.1:6379?password=S3cret"}, nil, `--addr "redis://127.0.0.1:6379?…": want host:port, not a URL`},
			{[]string{"--addr", "//ann:S3cret@127.0.0.1:6379"}, nil, `--addr "//…@127.0.0.1:6379": want host:port, or a socket's absolute path`},
			{[]string{"--db", "-1"}, nil, `--db "-1": want a database number from 0`},
			{nil, map[string]string{"EMQ_DB": "five"}, `--db "five": want a database number from 0 (the default from $EMQ_DB)`},
			{[]string{"--cert", "c.pem"}, nil, "--cert and --key: give both, or neither"},
			{[]string{"--addr", "/run/valkey.sock", "--sentinel", "q"}, nil, "--sentinel: --addr names Sentinels by host:port, not a socket"},
		} {
			r := emqEnv(t, c.vars, queuetest.Now, append([]string{"queues"}, c.args...)...)
			assert.Equal(t, exitUsage, r.code, "%q", c.args)
			assert.Contains(t, r.stderr, c.want)
			assert.NotContains(t, r.stderr, "S3cret")
		}
		r := emq(t, "", "queues", "--cacert", filepath.Join(t.TempDir(), "none.pem"))
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "--cacert: open ")
	})
}

// pki is a CA and the certificates it signed, as PEM files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// newPKI makes a CA, a certificate for 127.0.0.1 and a client's, each
// signed by it, in a directory of the test's.
func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	write := func(name, kind string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
		return p
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "emq test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	p := pki{ca: write("ca.pem", "CERTIFICATE", caDER)}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (cert, key string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		require.NoError(t, err)
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// startSentinel starts a Sentinel monitoring primary as name until the
// test ends, asking for password when it is not empty, and returns its
// address once it knows the primary.
func startSentinel(t *testing.T, primary *valkeytest.Server, name, password string) string {
	t.Helper()
	port, err := valkeytest.FreePort()
	require.NoError(t, err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile sentinel.log\nsentinel monitor %s 127.0.0.1 %d 1\n", port, dir, name, primary.Port)
	if password != "" {
		text += "requirepass " + password + "\n"
	}
	require.NoError(t, os.WriteFile(conf, []byte(text), 0o600))
	bin, err := exec.LookPath("valkey-server")
	require.NoError(t, err)
	cmd := exec.Command(bin, conf, "--sentinel")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	require.Eventually(t, func() bool {
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: password, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			return false
		}
		defer vk.Close()
		got, err := vk.Do(context.Background(), vk.B().Arbitrary("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name).Build()).AsStrSlice()
		return err == nil && len(got) == 2
	}, 10*time.Second, 50*time.Millisecond, "the Sentinel knows %s", name)
	return addr
}
