package engine

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffStructured(t *testing.T) {
	n := func(s string) json.Number { return json.Number(s) }
	tests := []struct {
		name     string
		old, new string
		want     []PathChange
	}{
		{"a nested scalar", "spec:\n  kubelet:\n    maxPods: 110\n", "spec:\n  kubelet:\n    maxPods: 120\n",
			[]PathChange{{Path: "spec.kubelet.maxPods", Old: n("110"), New: n("120")}}},
		{"JSON as well as YAML", `{"a": {"b": true}}`, "a:\n  b: false\n",
			[]PathChange{{Path: "a.b", Old: true, New: false}}},
		{"a field added and one removed", "a: 1\nb: x\n", "a: 1\nc: \"\"\n",
			[]PathChange{{Path: "b", Old: "x", New: Absent}, {Path: "c", Old: Absent, New: ""}}},
		{"a subtree added is shown leaf by leaf", "a: 1\n", "a: 1\nlocal:\n  dns: {provider: zonefile}\n  poolDir: /p\n",
			[]PathChange{{Path: "local.dns.provider", Old: Absent, New: "zonefile"}, {Path: "local.poolDir", Old: Absent, New: "/p"}}},
		{"named items by name, whatever their order",
			"containers:\n- name: a\n  image: a:1\n- name: b\n  image: b:1\n",
			"containers:\n- name: b\n  image: b:2\n- name: c\n  image: c:1\n",
			[]PathChange{
				{Path: "containers[b].image", Old: "b:1", New: "b:2"},
				{Path: "containers[c].image", Old: Absent, New: "c:1"}, {Path: "containers[c].name", Old: Absent, New: "c"},
				{Path: "containers[a].image", Old: "a:1", New: Absent}, {Path: "containers[a].name", Old: "a", New: Absent},
			}},
		{"files by path", "files:\n- path: /a\n  mode: \"0644\"\n", "files:\n- path: /a\n  mode: \"0600\"\n",
			[]PathChange{{Path: "files[/a].mode", Old: "0644", New: "0600"}}},
		{"other lists by index", "zones: [a]\n", "zones: [a, b]\n",
			[]PathChange{{Path: "zones[1]", Old: Absent, New: "b"}}},
		{"items with the same name are by index", "l:\n- name: x\n  v: 1\n- name: x\n  v: 2\n", "l:\n- name: x\n  v: 1\n- name: x\n  v: 3\n",
			[]PathChange{{Path: "l[1].v", Old: n("2"), New: n("3")}}},
		{"a command is diffed flag by flag", "command:\n- kubelet\n- --a=1\n- --max-pods=110\n- --z\n",
			"command:\n- kubelet\n- --a=1\n- --max-pods=120\n- --z\n- --new\n",
			[]PathChange{{Path: "command", Removed: []string{"--max-pods=110"}, Added: []string{"--max-pods=120", "--new"}}}},
		{"a multi-line string by line", "contents: |\n  one\n  two\n", "contents: |\n  one\n  2\n",
			[]PathChange{{Path: "contents", Lines: []string{"  one", "- two", "+ 2"}}}},
		{"keys with dots are quoted", "labels:\n  kubernetes.io/role: a\n", "labels:\n  kubernetes.io/role: b\n",
			[]PathChange{{Path: `labels["kubernetes.io/role"]`, Old: "a", New: "b"}}},
		{"a value that changes kind is shown whole", "a: [1, 2]\n", "a: x\n",
			[]PathChange{{Path: "a", Old: []any{n("1"), n("2")}, New: "x"}}},
		{"documents by kind and name",
			"kind: Cluster\nmetadata: {name: c}\nspec: {v: 1}\n---\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {maxSize: 1}\n",
			"kind: Cluster\nmetadata: {name: c}\nspec: {v: 1}\n---\nkind: InstanceGroup\nmetadata: {name: nodes}\nspec: {maxSize: 3}\n---\nkind: InstanceGroup\nmetadata: {name: b}\nspec: {maxSize: 1}\n",
			[]PathChange{
				{Path: "InstanceGroup[nodes].spec.maxSize", Old: n("1"), New: n("3")},
				{Path: "InstanceGroup[b].kind", Old: Absent, New: "InstanceGroup"},
				{Path: "InstanceGroup[b].metadata.name", Old: Absent, New: "b"},
				{Path: "InstanceGroup[b].spec.maxSize", Old: Absent, New: n("1")},
			}},
		{"documents without names by index", "a: 1\n---\nb: 1\n", "a: 1\n---\nb: 2\n",
			[]PathChange{{Path: "[1].b", Old: n("1"), New: n("2")}}},
		{"comments are not compared", "# sha256:aaa\na: 1\n", "# sha256:bbb\na: 1\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := DiffStructured(tt.old, tt.new)
			if !ok {
				t.Fatal("DiffStructured: not structured")
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(absentValue{})); diff != "" {
				t.Errorf("DiffStructured (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiffStructuredRefusesText(t *testing.T) {
	for _, text := range []string{
		"",
		"plain text\nover two lines\n",
		"- a list\n- of items\n",
		"[Unit]\nDescription=x\n",
		"DAEMON_ARGS=\"--a --b\"\n",
		"a: 1\n---\n- a list\n",
		"a: [unclosed\n",
	} {
		if _, ok := DiffStructured(text, "a: 1\n"); ok {
			t.Errorf("DiffStructured(%q, ...) is structured, want a line diff", text)
		}
		if _, ok := DiffStructured("a: 1\n", text); ok {
			t.Errorf("DiffStructured(..., %q) is structured, want a line diff", text)
		}
	}
}

func TestPathChangeText(t *testing.T) {
	tests := []struct {
		c    PathChange
		want []string
	}{
		{PathChange{Path: "spec.kubelet.maxPods", Old: json.Number("110"), New: json.Number("120")}, []string{"spec.kubelet.maxPods: 110 -> 120"}},
		{PathChange{Path: "spec.zones[1]", Old: Absent, New: "b"}, []string{"spec.zones[1]: <none> -> b"}},
		{PathChange{Path: "a", Old: "", New: nil}, []string{`a: "" -> null`}},
		{PathChange{Path: "a", Old: map[string]any{"y": json.Number("1"), "x": "s"}, New: Absent}, []string{`a: {"x":"s","y":1} -> <none>`}},
		{PathChange{Path: "command", Removed: []string{"--a"}, Added: []string{"--b"}}, []string{"command:", "  - --a", "  + --b"}},
		{PathChange{Path: "contents", Lines: []string{"- x", "+ y"}}, []string{"contents:", "  - x", "  + y"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.c.textLines()); diff != "" {
			t.Errorf("%s: textLines (-want +got):\n%s", tt.c.Path, diff)
		}
	}
}

func TestMayBeMap(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"apiVersion: v1\nkind: Pod\n", true},
		{"# a comment\n\n---\nkind: Pod\n", true},
		{"--- kind: Pod\n", true},
		{`{"a": 1}`, true},
		{"? complex key\n: value\n", true},
		{"", true},
		{"[Unit]\nDescription=kubelet\n", false},
		{"#!/bin/sh\nexec nodeup\n", false},
		{"line 0 of file 0 = value\nkey: value\n", false},
		{"- a\n- b\n", false}, // a list: never a map
	} {
		if got := mayBeMap(tc.text); got != tc.want {
			t.Errorf("mayBeMap(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
