package e2e

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BIND is a BIND 9 name server (Debian's named) that a test started: the primary server of one zone that accepts
// dynamic updates (RFC 2136) and zone transfers signed with one TSIG key.
type BIND struct {
	// Addr is where it listens, on TCP and UDP: "127.0.0.1:40123".
	Addr string
	// Zone is the zone it serves, canonical: "demo.example.com".
	Zone string
	// KeyName, KeyAlgorithm and KeySecret are the TSIG key that may update and transfer the zone, as
	// tsig-keygen prints them: "kubeup-e2e", "hmac-sha256", base64.
	KeyName, KeyAlgorithm, KeySecret string
	// Dir holds named.conf, the zone file and its journal, and named's log (named.log).
	Dir string

	cmd *exec.Cmd
}

// bindKeyName is the name of the TSIG key StartBIND makes.
const bindKeyName = "kubeup-e2e"

// StartBIND starts named in the foreground, as the primary server of zone ("demo.example.com", which holds its
// SOA, an NS record and the name server's address only) on a free port of 127.0.0.1, and
// waits until it answers the zone's SOA. It is stopped by its process id in t.Cleanup, and recorded in the e2e
// registry so that a later run kills it if this test process dies first.
//
// AppArmor: Debian's profile for /usr/sbin/named lets it read and write under /var/lib/bind and /var/cache/bind,
// not /tmp. When that profile is enforced, StartBIND keeps its files in a directory of its own under
// /var/lib/bind (removed at cleanup, and recorded in the registry); otherwise in t.TempDir().
func StartBIND(t testing.TB, zone string) *BIND {
	t.Helper()
	return startBIND(t, zone, "", 0)
}

// StartBINDOn is StartBIND listening on ip and port: a Net's Gateway and 53, where the resolver of a NetNode
// (SetResolver) asks, so that programs in the nodes resolve the zone's names through it. ip must be an address of
// one of the host's interfaces.
func StartBINDOn(t testing.TB, zone, ip string, port int) *BIND {
	t.Helper()
	return startBIND(t, zone, ip, port)
}

func startBIND(t testing.TB, zone, ip string, port int) *BIND {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "named")
	zone = strings.ToLower(strings.TrimSuffix(zone, "."))
	named, _ := exec.LookPath("named")
	dir := bindDir(t, named)
	secret := make([]byte, 32)
	rand.Read(secret)
	b := &BIND{Zone: zone, KeyName: bindKeyName, KeyAlgorithm: "hmac-sha256",
		KeySecret: base64.StdEncoding.EncodeToString(secret), Dir: dir}

	// A port free now may be taken before named binds it: try a few.
	var err error
	for range 5 {
		if err = b.start(t, named, ip, port); err == nil {
			return b
		}
		t.Logf("starting named: %v", err)
	}
	t.Fatalf("starting named for zone %s: %v\nlog %s:\n%s", zone, err, b.log(), tail(b.log(), 30))
	return nil
}

// bindDir returns the directory named's files go in.
func bindDir(t testing.TB, named string) string {
	t.Helper()
	if !apparmorEnforces(named) {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/var/lib/bind", "kubeup-e2e-")
	if err != nil {
		t.Fatalf("AppArmor confines named to /var/lib/bind, and a directory there cannot be made: %v", err)
	}
	unreg := register(t, record{Kind: kindDir, Path: dir})
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing named's directory: %v", err)
			return
		}
		unreg()
	})
	return dir
}

// apparmorEnforces reports whether an enforced AppArmor profile confines the program at path.
func apparmorEnforces(path string) bool {
	b, err := os.ReadFile("/sys/kernel/security/apparmor/profiles")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, mode, ok := strings.Cut(l, " (")
		if ok && mode == "enforce)" && (name == path || name == filepath.Base(path)) {
			return true
		}
	}
	return false
}

func (b *BIND) log() string { return filepath.Join(b.Dir, "named.log") }

// start writes the configuration for ip and port (a fresh port of 127.0.0.1 when ip is ""), starts named, and waits for its SOA answer.
func (b *BIND) start(t testing.TB, named, ip string, port int) error {
	t.Helper()
	if ip == "" {
		var err error
		if ip, port, err = freeLoopbackPort(); err != nil {
			return err
		}
	}
	b.Addr = net.JoinHostPort(ip, strconv.Itoa(port))
	if err := b.writeConfig(ip, port); err != nil {
		return err
	}
	log, err := os.Create(b.log())
	if err != nil {
		return err
	}
	defer log.Close()
	// -g: foreground, logging to stderr; -n 1: one worker thread is plenty; no -u: it stays root, and so can
	// write its journal in the test's directory.
	b.cmd = exec.Command(named, "-g", "-n", "1", "-c", filepath.Join(b.Dir, "named.conf"))
	b.cmd.Stdout, b.cmd.Stderr = log, log
	if err := b.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", named, err)
	}
	pid := b.cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- b.cmd.Wait() }()
	var unreg func()
	if start, err := processStart(pid); err == nil {
		unreg = register(t, record{Kind: kindProcess, PID: pid, Start: start})
	}
	stop := func() {
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			t.Logf("named (pid %d) did not stop in 10s after SIGTERM: killing it", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			<-waited
		}
		if unreg != nil {
			unreg()
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-waited:
			if unreg != nil {
				unreg()
			}
			return fmt.Errorf("named exited (%v): %s", err, tail(b.log(), 5))
		case <-time.After(50 * time.Millisecond):
		}
		err := querySOA(b.Addr, b.Zone)
		if err == nil {
			t.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("named (pid %d) does not answer the SOA of %s on %s after 30s: %v", pid, b.Zone, b.Addr, err)
		}
	}
}

// writeConfig writes named.conf and the zone file.
func (b *BIND) writeConfig(ip string, port int) error {
	conf := fmt.Sprintf(`# Written by kubeup's e2e tests (internal/e2e/bind.go).
options {
	directory %[1]q;
	pid-file none;
	session-keyfile %[2]q;
	managed-keys-directory %[1]q;
	listen-on port %[3]d { %[4]s; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
	notify no;
	allow-query { any; };
	allow-transfer { none; };
};
controls { };
key %[5]q {
	algorithm %[6]s;
	secret %[7]q;
};
zone %[8]q {
	type primary;
	file %[9]q;
	update-policy { grant %[5]s zonesub ANY; };
	allow-transfer { key %[5]s; };
};
`, b.Dir, filepath.Join(b.Dir, "session.key"), port, ip, b.KeyName, b.KeyAlgorithm, b.KeySecret, b.Zone,
		filepath.Join(b.Dir, b.Zone+".zone"))
	zoneFile := fmt.Sprintf(`$ORIGIN %[1]s.
$TTL 300
@	IN SOA ns.%[1]s. hostmaster.%[1]s. 1 3600 600 604800 60
@	IN NS ns.%[1]s.
ns	IN A %[2]s
`, b.Zone, ip)
	if err := os.WriteFile(filepath.Join(b.Dir, "named.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	// A fresh zone each time: remove the journal of an earlier attempt.
	os.Remove(filepath.Join(b.Dir, b.Zone+".zone.jnl"))
	return os.WriteFile(filepath.Join(b.Dir, b.Zone+".zone"), []byte(zoneFile), 0o644)
}

// freeLoopbackPort returns 127.0.0.1 and a port free on it for both TCP and UDP. named listens only on the
// addresses of the machine's interfaces, and lo has 127.0.0.1 alone (not all of 127.0.0.0/8): another address
// would have to be added to lo, a change of the host's network that a test should not make.
func freeLoopbackPort() (string, int, error) {
	const ip = "127.0.0.1"
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return "", 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return "", 0, fmt.Errorf("UDP port %d on %s: %w", port, ip, err)
	}
	u.Close()
	return ip, port, nil
}

// querySOA asks addr, over TCP, for the SOA of zone, and returns nil when the answer is authoritative and holds
// one. It speaks the protocol with the standard library alone (this package imports nothing else).
func querySOA(addr, zone string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	var q []byte
	q = binary.BigEndian.AppendUint16(q, 0x6b75) // id
	q = binary.BigEndian.AppendUint16(q, 0)      // a standard query, no recursion
	q = binary.BigEndian.AppendUint16(q, 1)      // one question
	q = append(q, make([]byte, 6)...)            // no answer, authority or additional records
	for _, label := range strings.Split(zone, ".") {
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	q = append(q, 0)
	q = binary.BigEndian.AppendUint16(q, 6) // SOA
	q = binary.BigEndian.AppendUint16(q, 1) // IN
	if _, err := conn.Write(binary.BigEndian.AppendUint16(nil, uint16(len(q)))); err != nil {
		return err
	}
	if _, err := conn.Write(q); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	var n uint16
	if err := binary.Read(r, binary.BigEndian, &n); err != nil {
		return err
	}
	a := make([]byte, n)
	if _, err := io.ReadFull(r, a); err != nil {
		return err
	}
	if len(a) < 12 || a[0] != q[0] || a[1] != q[1] {
		return errors.New("not an answer to the query")
	}
	flags := binary.BigEndian.Uint16(a[2:])
	rcode, aa, ancount := flags&0xf, flags&0x0400 != 0, binary.BigEndian.Uint16(a[6:])
	if rcode != 0 || !aa || ancount == 0 {
		return fmt.Errorf("answer code %d, authoritative %v, %d answers: the zone is not loaded", rcode, aa, ancount)
	}
	return nil
}
