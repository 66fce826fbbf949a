//go:build !linux

package volumetasks

import "errors"

var errNoBlockDevices = errors.New("whether a block device is in use is told on Linux only")

func blockDeviceNumber(path string) (string, bool, error) { return "", false, errNoBlockDevices }

// HeldExclusively cannot tell off Linux: an error.
func HeldExclusively(path string) (bool, error) { return false, errNoBlockDevices }
