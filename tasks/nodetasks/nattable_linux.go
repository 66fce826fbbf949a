package nodetasks

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
)

// NFTablesTable is kubeup's nftables table (family ip): `nft list table ip kubeup` shows it. kubeup replaces
// it whole and touches no other table.
const NFTablesTable = "kubeup"

// masqueradeChain is the table's one chain: nat, at the postrouting hook, source NAT's priority.
const masqueradeChain = "pod-egress"

// ruleTag starts the user data kubeup writes with its rule: the rule's fields, which Masquerade reads back.
const ruleTag = "kubeup masquerade "

// NFTables is kubeup's table in a network namespace, through nf_tables' netlink. Its sockets are opened in that
// namespace: the engine's goroutines may run on any thread, in whatever namespace it is in. One call at a time.
type NFTables struct {
	mu sync.Mutex
	c  *nftables.Conn
	ns netns.NsHandle // -1 for the process's own namespace
}

var _ NATTable = (*NFTables)(nil)

// NewNFTables returns kubeup's table of the network namespace at nsPath (/run/netns/NAME, /proc/PID/ns/net), or
// of the process's own with "". Close it when done.
func NewNFTables(nsPath string) (*NFTables, error) {
	t := &NFTables{ns: -1}
	var opts []nftables.ConnOption
	if nsPath != "" {
		ns, err := netns.GetFromPath(nsPath)
		if err != nil {
			return nil, fmt.Errorf("opening the network namespace %s: %w", nsPath, err)
		}
		t.ns = ns
		opts = append(opts, nftables.WithNetNSFd(int(ns)))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("opening nf_tables' netlink: %w", err)
	}
	t.c = c
	return t, nil
}

// Close closes the namespace's handle.
func (t *NFTables) Close() {
	if t.ns >= 0 {
		t.ns.Close()
		t.ns = -1
	}
}

func (t *NFTables) table() *nftables.Table {
	return &nftables.Table{Name: NFTablesTable, Family: nftables.TableFamilyIPv4}
}

// Masquerade reads kubeup's table: nil when there is none, the rule when it holds exactly the chain and rule
// SetMasquerade writes, and an empty rule when it holds anything else.
func (t *NFTables) Masquerade(ctx context.Context) (*MasqueradeRule, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tables, err := t.c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, err
	}
	found := false
	for _, tb := range tables {
		found = found || tb.Name == NFTablesTable
	}
	if !found {
		return nil, nil
	}
	chains, err := t.c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, err
	}
	var ours []*nftables.Chain
	for _, ch := range chains {
		if ch.Table != nil && ch.Table.Name == NFTablesTable {
			ours = append(ours, ch)
		}
	}
	other := &MasqueradeRule{}
	if len(ours) != 1 {
		return other, nil
	}
	ch := ours[0]
	if ch.Name != masqueradeChain || ch.Type != nftables.ChainTypeNAT || ch.Hooknum == nil || *ch.Hooknum != *nftables.ChainHookPostrouting ||
		ch.Priority == nil || *ch.Priority != *nftables.ChainPriorityNATSource {
		return other, nil
	}
	rules, err := t.c.GetRules(t.table(), ch)
	if err != nil {
		return nil, err
	}
	if len(rules) != 1 {
		return other, nil
	}
	fields, ok := strings.CutPrefix(string(rules[0].UserData), ruleTag)
	if !ok {
		return other, nil
	}
	var rule MasqueradeRule
	if _, err := fmt.Sscanf(fields, "source=%s except=%s", &rule.Source, &rule.Except); err != nil {
		return other, nil
	}
	want, err := masqueradeExprs(rule)
	if err != nil || len(rules[0].Exprs) != len(want) {
		return other, nil // another rule under kubeup's words
	}
	return &rule, nil
}

// SetMasquerade replaces kubeup's table with one that holds the rule alone, in one transaction: the table is
// made (when it is not there), deleted with whatever it held, and made again.
func (t *NFTables) SetMasquerade(ctx context.Context, rule MasqueradeRule) error {
	exprs, err := masqueradeExprs(rule)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	tb := t.table()
	t.c.AddTable(tb)
	t.c.DelTable(tb)
	t.c.AddTable(tb)
	ch := t.c.AddChain(&nftables.Chain{Name: masqueradeChain, Table: tb, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	t.c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: exprs,
		UserData: []byte(fmt.Sprintf("%ssource=%s except=%s", ruleTag, rule.Source, rule.Except))})
	return t.c.Flush()
}

// masqueradeExprs is `ip saddr SOURCE ip daddr != EXCEPT masquerade`.
func masqueradeExprs(rule MasqueradeRule) ([]expr.Any, error) {
	var out []expr.Any
	for _, m := range []struct {
		cidr   string
		offset uint32 // of the address in the IPv4 header
		op     expr.CmpOp
	}{{rule.Source, 12, expr.CmpOpEq}, {rule.Except, 16, expr.CmpOpNeq}} {
		p, err := netip.ParsePrefix(m.cidr)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("%q is not an IPv4 network", m.cidr)
		}
		p = p.Masked()
		mask := make([]byte, 4)
		for i := range p.Bits() {
			mask[i/8] |= 0x80 >> (i % 8)
		}
		out = append(out,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: m.offset, Len: 4},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
			&expr.Cmp{Op: m.op, Register: 1, Data: p.Addr().AsSlice()})
	}
	return append(out, &expr.Masq{}), nil
}
