package cloudup

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// thisProcess identifies this process on this machine: the boot's id, the PID namespace, the PID and the
// process's start time (which tells a reused PID from the process that held it). "" when /proc cannot say.
func thisProcess() string {
	m := machine()
	if m == "" {
		return ""
	}
	start := startTime(os.Getpid())
	if start == "" {
		return ""
	}
	return fmt.Sprintf("%s/%d/%s", m, os.Getpid(), start)
}

// processGone reports whether the process that id names (thisProcess of another run) is known to be gone: it
// ran on this machine, in this PID namespace, and no process with its PID and start time runs now. A process of
// another machine is never known to be gone.
func processGone(id string) bool {
	m, pid, start, ok := parseProcess(id)
	if !ok || m != machine() {
		return false
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
		return true
	}
	now := startTime(pid)
	return now != "" && now != start
}

// processRunning reports whether the process that id names (thisProcess of another run) is known to run still:
// it ran on this machine, in this PID namespace, and a process with its PID and start time runs now.
func processRunning(id string) bool {
	m, pid, start, ok := parseProcess(id)
	return ok && m == machine() && startTime(pid) == start
}

// parseProcess splits what thisProcess returns: machine/pid/start.
func parseProcess(id string) (m string, pid int, start string, ok bool) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return "", 0, "", false
	}
	rest, start := id[:i], id[i+1:]
	j := strings.LastIndexByte(rest, '/')
	if j < 0 {
		return "", 0, "", false
	}
	m, pidText := rest[:j], rest[j+1:]
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || m == "" || start == "" {
		return "", 0, "", false
	}
	return m, pid, start, true
}

// machine is this boot of this machine, and this PID namespace: where a PID means one process.
func machine() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// startTime is field 22 of /proc/PID/stat: when the process started, in clock ticks since boot.
func startTime(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces and parentheses: count after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // fields[0] is field 3
}
