package model

import (
	"fmt"
	"strings"
)

// The machine a launch template starts runs its user data once, at first boot: it fetches nodeup, checks it and
// runs it with the instance group's node configuration. nodeup installs itself and a unit that runs it again at
// every later boot.

// NodeupRetries is how many more times the user data's nodeup tries a failed run (a state store not reachable
// yet, an instance profile not in effect yet), with its backoff (5s doubling up to a minute: about 8 minutes).
const NodeupRetries = 10

// NodeConfigURL is where a machine of instance group ig reads its node configuration: the state store of
// spec.configBase and NodeConfigPath (s3://bucket/demo.example.com/nodeup/nodes).
func NodeConfigURL(c *Cluster, ig string) (string, error) {
	name := c.Metadata.Name
	store, ok := strings.CutSuffix(strings.TrimSuffix(c.Spec.ConfigBase, "/"), "/"+name)
	if !ok || store == "" {
		return "", fmt.Errorf("cluster %s: spec.configBase %q is not <state store>/%s: kubeup sets it when it writes the cluster", name, c.Spec.ConfigBase, name)
	}
	return store + "/" + NodeConfigPath(name, ig), nil
}

// UserData is the user data of instance group ig of a complete, valid aws spec: NodeBootScript with the
// group's node configuration in the state store (NodeConfigURL), which cloud-init runs once, at first boot.
func UserData(c *Cluster, ig *InstanceGroup, confSHA256 string) (string, error) {
	conf, err := NodeConfigURL(c, ig.Metadata.Name)
	if err != nil {
		return "", err
	}
	return NodeBootScript(c, ig, conf, confSHA256, false)
}

// StartupScript is the startup-script metadata of instance group ig of a complete, valid gce spec:
// NodeBootScript with the group's node configuration in the state store (gs://BUCKET/<cluster>/nodeup/<group>).
// GCE's guest agent runs a startup script at every boot, not once: the script does nothing once nodeup's unit
// is installed (the unit runs nodeup at every later boot, with the configuration the store holds then).
func StartupScript(c *Cluster, ig *InstanceGroup, confSHA256 string) (string, error) {
	conf, err := NodeConfigURL(c, ig.Metadata.Name)
	if err != nil {
		return "", err
	}
	return NodeBootScript(c, ig, conf, confSHA256, true)
}

// NodeBootScript is the script a machine of instance group ig of a complete, valid aws or gce spec runs at its
// first boot, whatever the cloud: a bash script that downloads spec.nodeup.url with retries, refuses it unless
// its sha256 is spec.nodeup.sha256 (saying so on the console), installs it as /usr/local/bin/nodeup and runs it
// with the group's node configuration at confURL (s3://..., gs://...), pinned to confSHA256 (the sha256 on the
// configuration's first line): a machine started from an older template than the configuration in the store
// refuses it, changing nothing. everyBoot says the cloud runs the script at every boot (GCE's startup scripts):
// it then exits at once when nodeup's unit (nodeup.UnitName) is installed already.
func NodeBootScript(c *Cluster, ig *InstanceGroup, confURL, confSHA256 string, everyBoot bool) (string, error) {
	n := c.Spec.Nodeup
	if n == nil || n.URL == "" || n.SHA256 == "" {
		return "", fmt.Errorf("cluster %s: spec.nodeup.url and spec.nodeup.sha256 are required to make the machines' boot script", c.Metadata.Name)
	}
	if !isSHA256Hex(confSHA256) {
		return "", fmt.Errorf("instance group %s: %q is not the sha256 of a node configuration", ig.Metadata.Name, confSHA256)
	}
	if confURL == "" {
		return "", fmt.Errorf("instance group %s: no node configuration URL", ig.Metadata.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `#!/bin/bash
# kubeup: instance group %s of cluster %s.
# Downloads nodeup, checks its sha256, and runs it with the group's node configuration; nodeup installs a
# unit that runs it again at every boot.
set -euo pipefail

NODEUP_URL=%s
NODEUP_SHA256=%s
CONF=%s
CONF_SHA256=%s
`, ig.Metadata.Name, c.Metadata.Name, shellQuote(n.URL), shellQuote(strings.ToLower(n.SHA256)), shellQuote(confURL), shellQuote(confSHA256))
	if everyBoot {
		fmt.Fprintf(&b, `
# This script runs at every boot: after the first, nodeup's unit runs nodeup.
if [ -e %s ]; then
	exit 0
fi
`, shellQuote(nodeupUnitFile))
	}
	b.WriteString(`
fail() {
	echo "kubeup: $*" >&2
	{ echo "kubeup: $*" >/dev/console; } 2>/dev/null || true
	exit 1
}

mkdir -p /usr/local/bin
tmp=$(mktemp /usr/local/bin/.nodeup.XXXXXX)
trap 'rm -f "$tmp"' EXIT
curl --fail --silent --show-error --location --connect-timeout 10 --max-time 600 \
	--retry 20 --retry-delay 5 --retry-connrefused -o "$tmp" "$NODEUP_URL" ||
	fail "could not download nodeup from $NODEUP_URL"
if ! echo "$NODEUP_SHA256  $tmp" | sha256sum --check --status; then
	fail "nodeup downloaded from $NODEUP_URL has sha256 $(sha256sum "$tmp" | cut -d' ' -f1), not $NODEUP_SHA256 (spec.nodeup.sha256): refusing to run it"
fi
chmod 0755 "$tmp"
mv -f "$tmp" /usr/local/bin/nodeup
trap - EXIT
`)
	fmt.Fprintf(&b, "exec /usr/local/bin/nodeup --conf=\"$CONF\" --conf-sha256=\"$CONF_SHA256\" --install-systemd-unit --retries=%d\n", NodeupRetries)
	return b.String(), nil
}

// nodeupUnitFile is the unit nodeup --install-systemd-unit installs (nodeup.UnitName in /etc/systemd/system;
// model does not import nodeup).
const nodeupUnitFile = "/etc/systemd/system/kubeup-nodeup.service"

// shellQuote quotes s as one word of a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
