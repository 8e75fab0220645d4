package main

import (
	"bufio"
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
// of every pod's log, one file after another, read as one interleaved log. Files are streamed,
// never held whole: memory stays flat in the logs' size.
type jobLog struct {
	Files []string // the files, in order ("-" for stdin)
	stdin []byte   // stdin, read once (it cannot be read twice)
}

// readLogs expands the --log arguments: files, directories (their files, sorted, not recursing)
// and '-'. It checks every file can be opened before anything is read.
func readLogs(args []string) (*jobLog, error) {
	j := &jobLog{}
	for _, a := range args {
		if a == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("-: %w", err)
			}
			j.stdin, j.Files = b, append(j.Files, "-")
			continue
		}
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			j.Files = append(j.Files, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var files []string
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(a, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no log files in the directory", a)
		}
		sort.Strings(files)
		j.Files = append(j.Files, files...)
	}
	return j, nil
}

// open is one file's content.
func (j *jobLog) open(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(bytes.NewReader(j.stdin)), nil
	}
	return os.Open(name)
}

// each streams every file in turn, each followed by a newline (the next starts on its own line).
func (j *jobLog) each(fn func(name string, r io.Reader) error) error {
	for _, name := range j.Files {
		f, err := j.open(name)
		if err != nil {
			return err
		}
		err = fn(name, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Reader is every file, one after another, as one stream. Closing it stops the stream.
func (j *jobLog) Reader() io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(j.each(func(name string, r io.Reader) error {
			if _, err := io.Copy(pw, r); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			_, err := pw.Write([]byte{'\n'})
			return err
		}))
	}()
	return pr
}

// read streams every file, one after another, through fn: each call reads the files again
// (the table reader and NCCL's lines read the same job), and memory stays flat in their size.
func (j *jobLog) read(fn func(io.Reader) error) error {
	r := j.Reader()
	defer r.Close()
	return fn(r)
}

// startsWithJSON says whether the first byte that is not white space opens a JSON document.
func (j *jobLog) startsWithJSON() (bool, error) {
	var first byte
	err := j.read(func(r io.Reader) error {
		br := bufio.NewReader(r)
		for {
			b, err := br.ReadByte()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if strings.IndexByte(" \t\r\n\v\f", b) < 0 {
				first = b
				return nil
			}
		}
	})
	return first == '{', err
}

// sourcesOf names the files that hold a text (a finding's quoted evidence), for a job read from
// several: which pod each fact came from. Each file is streamed line by line.
func (j *jobLog) sourcesOf(text string) []string {
	if len(j.Files) < 2 || text == "" {
		return nil
	}
	var out []string
	j.each(func(name string, r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), text) {
				out = append(out, name)
				break
			}
		}
		return nil
	})
	return out
}
