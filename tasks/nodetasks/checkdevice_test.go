package nodetasks

import (
	"strings"
	"testing"
)

// TestCheckDeviceOtherTypes: a device holding another filesystem is refused with the FSType that would mount
// it; one holding what no FSType mounts (swap, an LVM member, an encrypted volume's header) is refused without
// that advice.
func TestCheckDeviceOtherTypes(t *testing.T) {
	m := &FormatAndMount{MountPoint: "/mnt/v", Device: "/dev/loop9", FSType: ptr("ext4")}
	for _, tt := range []struct {
		found       string
		want, never string
	}{
		{found: "xfs", want: `holds an xfs filesystem, not ext4: kubeup never reformats a device: check that it is the right device, or set FSType to "xfs"`},
		{found: "swap", want: "holds swap space (blkid TYPE=swap), not ext4: kubeup never reformats a device, and does not mount swap", never: "set FSType"},
		{found: "LVM2_member", want: "does not mount LVM2_member", never: "set FSType"},
		{found: "crypto_LUKS", want: "does not mount crypto_LUKS", never: "set FSType"},
	} {
		err := checkDevice(m, m.Device, &probe{fsType: tt.found})
		if err == nil || !strings.Contains(err.Error(), tt.want) || tt.never != "" && strings.Contains(err.Error(), tt.never) {
			t.Errorf("%s: %v; want %q, never %q", tt.found, err, tt.want, tt.never)
		}
	}
}
