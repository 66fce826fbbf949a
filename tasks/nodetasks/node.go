package nodetasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	sdbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// Node is the world of the node graph: a root directory and, when a systemd runs there, its D-Bus connection.
// Build one with NewNode and Close it when done. The tasks run concurrently; a Node is safe for that.
type Node struct {
	// Root is the node's filesystem root: "/" on a real node, a directory when nodeup converges a tree
	// (--root DIR), or /proc/PID/root to reach into a container's mount namespace.
	Root string
	// Systemd is the connection to the systemd that runs in Root; nil when none runs there, and then services
	// are managed as unit files only (enabled = the wants/ symlinks, running is not managed).
	Systemd *sdbus.Conn

	http        *http.Client
	open        func(ctx context.Context, rawURL string) (io.ReadCloser, error)
	diskByID    string
	startSettle time.Duration
	journal     FormatJournal
	guard       MountGuard
	nat         NATTable
	closeNAT    func() // closes the NAT table NewNode opened

	rootMu  sync.Mutex
	rootDir *os.File // Root, opened (O_PATH) on first use and kept until Close: every node file is opened below it

	reloadMu sync.Mutex             // one unit-file write and daemon-reload at a time
	devMu    sync.Mutex             // guards devLock
	devLock  map[string]*sync.Mutex // per block device: probe, format and mount as one step
}

// NodeOptions adjust NewNode. The zero value is right for a real node.
type NodeOptions struct {
	// Systemd says how to reach systemd: SystemdAuto (default) connects when Root has a systemd socket,
	// SystemdNone never connects, SystemdRequired fails when it cannot connect.
	Systemd SystemdMode
	// SystemdSocket overrides the socket to connect to (default: Root/run/systemd/private, then the system bus
	// at Root/run/dbus/system_bus_socket).
	SystemdSocket string
	// HTTPClient downloads assets (default: a client with a 10-minute overall timeout).
	HTTPClient *http.Client
	// Open reads an asset's URL that is not http or https (file://, s3://, gs://: a state store's); nil: such
	// URLs are refused. Its error's class (engine.Retryable, engine.Terminal) is kept.
	Open func(ctx context.Context, rawURL string) (io.ReadCloser, error)
	// DiskByID is where cloud disk names are resolved (default /dev/disk/by-id).
	DiskByID string
	// StartSettle is how long a service must stay active after its start job finished before it counts as
	// started: a service that crashes at once is reported as failed (default 1s).
	StartSettle time.Duration
	// FormatJournal and MountGuard are what the provider of the node's volumes offers FormatAndMount (protokube:
	// the cloud's), by the volume's id (FormatAndMount.Volume): where a format is journaled on the volume, and the
	// check, right before a mount, that the node still holds it. nil: the provider offers none.
	FormatJournal FormatJournal
	MountGuard    MountGuard
	// NAT is the node's nftables table (PodMasquerade); nil: kubeup's table of the process's own network
	// namespace when root is "/" (the process runs on the node), none otherwise (a root converged from outside:
	// its namespace is not this process's).
	NAT NATTable
}

// SystemdMode says whether NewNode connects to systemd.
type SystemdMode int

const (
	SystemdAuto SystemdMode = iota
	SystemdNone
	SystemdRequired
)

// NewNode returns the Node rooted at root. It connects to the systemd that runs there, through
// root/run/systemd/private or the system bus socket, when one of them exists (see NodeOptions.Systemd).
func NewNode(ctx context.Context, root string, opts NodeOptions) (*Node, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("node root %q is not an absolute path", root)
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("node root %s is not a directory", root)
	}
	n := &Node{
		Root:        filepath.Clean(root),
		http:        opts.HTTPClient,
		open:        opts.Open,
		diskByID:    opts.DiskByID,
		startSettle: opts.StartSettle,
		journal:     opts.FormatJournal,
		guard:       opts.MountGuard,
		nat:         opts.NAT,
		devLock:     map[string]*sync.Mutex{},
	}
	if n.nat == nil && n.Root == "/" {
		nat, err := NewNFTables("")
		if err != nil {
			return nil, err
		}
		n.nat, n.closeNAT = nat, nat.Close
	}
	if n.http == nil {
		n.http = &http.Client{Timeout: 10 * time.Minute}
	}
	if n.diskByID == "" {
		n.diskByID = "/dev/disk/by-id"
	}
	if n.startSettle <= 0 {
		n.startSettle = time.Second
	}
	if opts.Systemd == SystemdNone {
		return n, nil
	}
	conn, err := connectSystemd(ctx, n.Root, opts.SystemdSocket)
	switch {
	case err == nil:
		n.Systemd = conn
	case errors.Is(err, errNoSystemd) && opts.Systemd == SystemdAuto:
	default:
		return nil, err
	}
	return n, nil
}

// Close closes the connection to systemd, if any, and the descriptor of Root.
func (n *Node) Close() error {
	if n.closeNAT != nil {
		n.closeNAT()
		n.closeNAT = nil
	}
	if n.Systemd != nil {
		n.Systemd.Close()
		n.Systemd = nil
	}
	n.rootMu.Lock()
	defer n.rootMu.Unlock()
	if n.rootDir != nil {
		n.rootDir.Close()
		n.rootDir = nil
	}
	return nil
}

// rootFD returns a descriptor of Root (O_PATH), opened on first use: what openInRoot opens node files from. It
// stays valid until Close.
func (n *Node) rootFD() (int, error) {
	n.rootMu.Lock()
	defer n.rootMu.Unlock()
	if n.rootDir == nil {
		fd, err := unix.Open(n.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		n.rootDir = os.NewFile(uintptr(fd), n.Root)
	}
	return int(n.rootDir.Fd()), nil
}

var errNoSystemd = errors.New("no systemd socket")

// connectSystemd connects to the systemd of root: its private socket (root only, no bus daemon needed), else
// the system bus.
func connectSystemd(ctx context.Context, root, socket string) (*sdbus.Conn, error) {
	candidates := []struct {
		path  string
		hello bool // a bus daemon wants Hello; systemd's private socket is peer to peer
	}{
		{filepath.Join(root, "run/systemd/private"), false},
		{filepath.Join(root, "run/dbus/system_bus_socket"), true},
	}
	if socket != "" {
		candidates = candidates[:0]
		candidates = append(candidates, struct {
			path  string
			hello bool
		}{socket, filepath.Base(socket) != "private"})
	}
	var errs []error
	for _, c := range candidates {
		if st, err := os.Stat(c.path); err != nil || st.Mode().Type() != fs.ModeSocket {
			if socket != "" {
				return nil, fmt.Errorf("%w: %s is not a socket", errNoSystemd, c.path)
			}
			continue
		}
		conn, err := sdbus.NewConnection(func() (*dbus.Conn, error) { return dialSystemd(c.path, c.hello) })
		if err == nil {
			// The private socket accepts connections before systemd is ready to answer: ask it something.
			_, err = conn.SystemStateContext(ctx)
			if err == nil {
				return conn, nil
			}
			conn.Close()
		}
		errs = append(errs, fmt.Errorf("connecting to systemd at %s: %w", c.path, err))
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%w under %s", errNoSystemd, root)
	}
	return nil, errors.Join(errs...)
}

// dialSystemd opens one authenticated connection. It is not tied to a context: the connection lives as long as
// the Node.
func dialSystemd(path string, hello bool) (*dbus.Conn, error) {
	conn, err := dbus.Dial("unix:path=" + path)
	if err != nil {
		return nil, err
	}
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		conn.Close()
		return nil, err
	}
	if hello {
		if err := conn.Hello(); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// deviceLock returns the lock that serialises probing, formatting and mounting of one device.
func (n *Node) deviceLock(dev string) *sync.Mutex {
	n.devMu.Lock()
	defer n.devMu.Unlock()
	l, ok := n.devLock[dev]
	if !ok {
		l = &sync.Mutex{}
		n.devLock[dev] = l
	}
	return l
}

// NATTable is the node's nftables table: nil where this process is not in the node's network namespace.
func (n *Node) NATTable() NATTable { return n.nat }

var _ NATWorld = (*Node)(nil)
