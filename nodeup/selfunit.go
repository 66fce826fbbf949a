package nodeup

import (
	"os"
	"strconv"
	"strings"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/nodetasks"
)

// Where --install-systemd-unit installs nodeup on the node.
const (
	// UnitName is the oneshot unit that runs nodeup at every boot.
	UnitName = "kubeup-nodeup.service"
	// InstalledBinary is where nodeup copies itself for the unit to run.
	InstalledBinary = "/usr/local/bin/nodeup"
)

// addSelfUnit adds to g the tasks that make nodeup run at every boot: the running binary copied to
// InstalledBinary, and the oneshot unit that runs it with the same configuration. The unit is enabled but not
// started: this run is converging the node already. It is not pinned to a configuration's sha256 (--conf-sha256
// is the first boot's): a later boot converges the node to the configuration in the store.
func addSelfUnit(g *engine.Graph[*nodetasks.Node], executable, sha, conf string, retries int) {
	engine.Add(g, &Executable{Path: InstalledBinary, Source: executable, SHA256: sha, Mode: ptr(os.FileMode(0o755))})
	engine.Add(g, &nodetasks.SystemdService{
		Name:       UnitName,
		Definition: ptr(selfUnit(conf, retries)),
		Enabled:    ptr(true),
	})
}

// selfUnit is the unit that runs nodeup with conf at boot: after the network is up, once, and reported active
// afterwards so that `systemctl status` shows how the last run went.
func selfUnit(conf string, retries int) string {
	args := []string{InstalledBinary, "--conf=" + conf}
	if retries != 0 {
		args = append(args, "--retries="+strconv.Itoa(retries))
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = systemdQuote(a)
	}
	return `# Managed by kubeup (nodeup --install-systemd-unit): runs nodeup at every boot.
[Unit]
Description=kubeup nodeup: converge this node to its configuration
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=` + strings.Join(quoted, " ") + `

[Install]
WantedBy=multi-user.target
`
}

// systemdQuote quotes one word of an ExecStart= line: specifiers (%) and variables ($) are escaped, and a word
// with anything but plain characters is put in double quotes.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	s = strings.ReplaceAll(s, "$", "$$")
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%$", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
