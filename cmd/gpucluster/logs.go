package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// logFlag is a repeatable --log: one job's logs, a file or a directory of them each (every pod's
// log), or '-' for stdin.
type logFlag []string

func (l *logFlag) String() string     { return strings.Join(*l, ",") }
func (l *logFlag) Set(v string) error { *l = append(*l, v); return nil }

// jobLog is one job's logs read as one: NCCL's lines carry their host and process, so the lines
// of every pod's log, one file after another, read as one interleaved log.
type jobLog struct {
	Files []string // the files read, in order ("-" for stdin)
	Data  []byte
	// ends[i] is where file i's data ends, to say which file a line came from.
	ends []int
}

// readLogs reads the --log arguments: files, directories (their files, sorted, not recursing)
// and '-'.
func readLogs(args []string) (*jobLog, error) {
	j := &jobLog{}
	add := func(name string, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		j.Files = append(j.Files, name)
		j.Data = append(j.Data, b...)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			j.Data = append(j.Data, '\n') // the next file starts on a line of its own
		}
		j.ends = append(j.ends, len(j.Data))
		return nil
	}
	for _, a := range args {
		if a == "-" {
			if err := add("-", stdin); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		files := []string{a}
		if info.IsDir() {
			entries, err := os.ReadDir(a)
			if err != nil {
				return nil, err
			}
			files = nil
			for _, e := range entries {
				if e.Type().IsRegular() {
					files = append(files, filepath.Join(a, e.Name()))
				}
			}
			sort.Strings(files)
			if len(files) == 0 {
				return nil, fmt.Errorf("%s: no log files in the directory", a)
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if err := add(f, bytes.NewReader(b)); err != nil {
				return nil, err
			}
		}
	}
	return j, nil
}

// sourcesOf names the files that hold a text (a finding's quoted evidence), for a job read from
// several: which pod each fact came from.
func (j *jobLog) sourcesOf(text string) []string {
	if len(j.Files) < 2 || text == "" {
		return nil
	}
	var out []string
	start := 0
	for i, end := range j.ends {
		if bytes.Contains(j.Data[start:end], []byte(text)) {
			out = append(out, j.Files[i])
		}
		start = end
	}
	return out
}
