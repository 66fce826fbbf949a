package nodetasks

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The node's users and groups are the ones in Root/etc/passwd and Root/etc/group, not this process's: with
// --root DIR they are the tree's.

// idOf returns the numeric id of a user (db "/etc/passwd") or group (db "/etc/group") given by name or number.
func (n *Node) idOf(db, nameOrID string) (int, error) {
	if id, err := strconv.Atoi(nameOrID); err == nil && id >= 0 {
		return id, nil
	}
	entries, err := n.idDB(db)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if e.name == nameOrID {
			return e.id, nil
		}
	}
	return 0, fmt.Errorf("%q is not in the node's %s: create it first (order the task After the one that does)",
		nameOrID, db)
}

// nameOf returns how Find reports the id: as a number when the task names it by number, else by name (the
// number when the database has no name for it).
func (n *Node) nameOf(db string, id int, want *string) (*string, error) {
	s := strconv.Itoa(id)
	if want == nil {
		return nil, nil
	}
	if _, err := strconv.Atoi(*want); err == nil {
		return &s, nil
	}
	entries, err := n.idDB(db)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.id == id {
			return &e.name, nil
		}
	}
	return &s, nil
}

type idEntry struct {
	name string
	id   int
}

// idDB reads a passwd- or group-format file of the node: name:password:id:...
func (n *Node) idDB(db string) ([]idEntry, error) {
	b, ok, err := n.readNodeFile(db)
	if err != nil || !ok {
		return nil, err
	}
	var out []idEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		out = append(out, idEntry{name: f[0], id: id})
	}
	return out, nil
}
