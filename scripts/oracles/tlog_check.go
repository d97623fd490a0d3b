// tlog_check: the custody tree checked by code we did not write, Go's golang.org/x/mod/sumdb/tlog
// (Debian golang-golang-x-mod-dev), which implements RFC 6962/9162 hashing, inclusion
// (CheckRecord) and consistency (CheckTree) proofs for the Go checksum database.
//
//	tlog_check bundle DIR
//	    every custody/<seq>.tlog-proof of a bundle, for each event of custody.jsonl up to the
//	    checkpoint's size, against custody/checkpoint
//	tlog_check log HASHES CHECKPOINTS.json
//	    HASHES: every custody event's hash (hex), one a line, in sequence order; CHECKPOINTS.json:
//	    `evidence log checkpoints --json`. Each root is recomputed (tlog.TreeHash) and each
//	    consistency proof checked (tlog.CheckTree).
//
// Build: GO111MODULE=off GOPATH=/usr/share/gocode go build -o tlog_check tlog_check.go
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "tlog_check: "+format+"\n", args...)
	os.Exit(1)
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

// parseCheckpoint reads a C2SP checkpoint body: origin, size, base64 root, each ending in \n.
func parseCheckpoint(b []byte) checkpoint {
	lines := strings.Split(string(b), "\n")
	if len(lines) != 4 || lines[3] != "" {
		fail("checkpoint is not three lines: %q", b)
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 {
		fail("checkpoint size %q", lines[1])
	}
	h, err := tlog.ParseHash(lines[2])
	if err != nil {
		fail("checkpoint root %q: %v", lines[2], err)
	}
	return checkpoint{lines[0], n, h}
}

func hashOf(hexText string) []byte {
	b, err := hex.DecodeString(hexText)
	if err != nil || len(b) != 32 {
		fail("event hash %q is not 32 bytes of hex", hexText)
	}
	return b
}

func bundle(dir string) {
	cpBytes, err := os.ReadFile(filepath.Join(dir, "custody", "checkpoint"))
	if err != nil {
		fail("%v", err)
	}
	cp := parseCheckpoint(cpBytes)
	f, err := os.Open(filepath.Join(dir, "custody.jsonl"))
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	checked, later := 0, 0
	for scanner.Scan() {
		var e struct {
			Seq  int64  `json:"seq"`
			Hash string `json:"hash"`
		}
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			fail("custody.jsonl: %v", err)
		}
		if e.Seq > cp.size {
			later++
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, "custody", fmt.Sprintf("%d.tlog-proof", e.Seq)))
		if err != nil {
			fail("%v", err)
		}
		head, rest, found := bytes.Cut(text, []byte("\n\n"))
		if !found || !bytes.Equal(rest, cpBytes) {
			fail("event %d: the proof's checkpoint is not custody/checkpoint", e.Seq)
		}
		lines := strings.Split(string(head), "\n")
		if lines[0] != "c2sp.org/tlog-proof@v1" {
			fail("event %d: first line %q", e.Seq, lines[0])
		}
		lines = lines[1:]
		if len(lines) > 0 && strings.HasPrefix(lines[0], "extra ") {
			lines = lines[1:]
		}
		if len(lines) == 0 || lines[0] != fmt.Sprintf("index %d", e.Seq-1) {
			fail("event %d: index line %q", e.Seq, lines)
		}
		var proof tlog.RecordProof
		for _, l := range lines[1:] {
			h, err := tlog.ParseHash(l)
			if err != nil {
				fail("event %d: proof hash %q: %v", e.Seq, l, err)
			}
			proof = append(proof, h)
		}
		if err := tlog.CheckRecord(proof, cp.size, cp.root, e.Seq-1, tlog.RecordHash(hashOf(e.Hash))); err != nil {
			fail("event %d: %v", e.Seq, err)
		}
		checked++
	}
	if err := scanner.Err(); err != nil {
		fail("%v", err)
	}
	fmt.Printf("%d inclusion proofs verified by golang.org/x/mod/sumdb/tlog against %s at %d (%d later events not covered)\n",
		checked, cp.origin, cp.size, later)
}

func log(hashesFile, checkpointsFile string) {
	data, err := os.ReadFile(hashesFile)
	if err != nil {
		fail("%v", err)
	}
	var stored []tlog.Hash
	var n int64
	reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			out[i] = stored[x]
		}
		return out, nil
	})
	roots := map[int64]tlog.Hash{}
	for _, line := range strings.Fields(string(data)) {
		more, err := tlog.StoredHashes(n, hashOf(line), reader)
		if err != nil {
			fail("%v", err)
		}
		stored = append(stored, more...)
		n++
		root, err := tlog.TreeHash(n, reader)
		if err != nil {
			fail("%v", err)
		}
		roots[n] = root
	}
	raw, err := os.ReadFile(checkpointsFile)
	if err != nil {
		fail("%v", err)
	}
	var entries []struct {
		Anchor      string   `json:"anchor"`
		Checkpoint  string   `json:"checkpoint"`
		From        *int64   `json:"from"`
		Consistency []string `json:"consistency"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		fail("%s: %v", checkpointsFile, err)
	}
	if len(entries) == 0 {
		fail("no checkpoints")
	}
	consistent := 0
	for _, e := range entries {
		cp := parseCheckpoint([]byte(e.Checkpoint))
		if root, ok := roots[cp.size]; !ok || root != cp.root {
			fail("%s: root %v is not the tree of the first %d events (%v)", e.Anchor, cp.root, cp.size, roots[cp.size])
		}
		if e.From != nil {
			var proof tlog.TreeProof
			for _, s := range e.Consistency {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil || len(b) != 32 {
					fail("%s: consistency hash %q", e.Anchor, s)
				}
				var h tlog.Hash
				copy(h[:], b)
				proof = append(proof, h)
			}
			if err := tlog.CheckTree(proof, cp.size, cp.root, *e.From, roots[*e.From]); err != nil {
				fail("%s: consistency from %d: %v", e.Anchor, *e.From, err)
			}
			consistent++
		}
	}
	fmt.Printf("%d checkpoint roots recomputed and %d consistency proofs verified by golang.org/x/mod/sumdb/tlog over %d events\n",
		len(entries), consistent, n)
}

func main() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == "bundle":
		bundle(os.Args[2])
	case len(os.Args) == 4 && os.Args[1] == "log":
		log(os.Args[2], os.Args[3])
	default:
		fail("usage: tlog_check bundle DIR | tlog_check log HASHES CHECKPOINTS.json")
	}
}
