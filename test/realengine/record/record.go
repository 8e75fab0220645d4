// Package record is what the aws provider double of the real-engine tests writes: one JSON line
// per call the engine made of it (check, create, update, delete, invoke, ...), in the order the
// calls arrived, so that a test reads what the engine did instead of re-deriving it. Read
// refuses a line it cannot parse.
package record

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// EnvFile names the file a double appends its calls to.
const EnvFile = "GPUCLUSTER_DOUBLE_RECORD"

// Call is one call of the engine to a provider double.
type Call struct {
	Provider string         `json:"provider"` // "aws"
	Version  string         `json:"version"`  // the provider version that served the call
	Op       string         `json:"op"`       // check (a refused one), create, update, delete, read, invoke
	Type     string         `json:"type,omitempty"`
	URN      string         `json:"urn,omitempty"`
	ID       string         `json:"id,omitempty"`
	Token    string         `json:"token,omitempty"` // invokes
	Inputs   map[string]any `json:"inputs,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// Writer appends calls to the record file; a nil Writer records nothing.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Open opens the file EnvFile names for appending, or returns nil when the variable is unset.
func Open() (*Writer, error) {
	path := os.Getenv(EnvFile)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends one call as one line (O_APPEND: the doubles' processes share the file).
func (w *Writer) Write(c Call) {
	if w == nil {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		b, _ = json.Marshal(Call{Provider: c.Provider, Op: c.Op, URN: c.URN, Error: "unrecordable inputs: " + err.Error()})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.f.Write(append(b, '\n'))
}

// Read returns every call in a record file, in order.
func Read(path string) ([]Call, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var calls []Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("%s:%d: not a double's call: %v", path, n, err)
		}
		if c.Provider == "" || c.Op == "" {
			return nil, fmt.Errorf("%s:%d: a call without provider or op", path, n)
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}
