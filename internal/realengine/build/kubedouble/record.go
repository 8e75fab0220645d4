package main

import (
	"encoding/json"
	"os"
	"sync"
)

// call is one line of the doubles' record. Its shape is defined by internal/realengine/record
// (Call), whose Read refuses a line of another shape; this module cannot import the main
// module's internal packages, so it writes the same fields.
type call struct {
	Provider string         `json:"provider"`
	Op       string         `json:"op"`
	Type     string         `json:"type,omitempty"`
	URN      string         `json:"urn,omitempty"`
	ID       string         `json:"id,omitempty"`
	Token    string         `json:"token,omitempty"`
	Inputs   map[string]any `json:"inputs,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// recorder appends calls to the file of GPUCLUSTER_DOUBLE_RECORD (record.EnvFile).
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func openRecorder() (*recorder, error) {
	path := os.Getenv("GPUCLUSTER_DOUBLE_RECORD")
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f}, nil
}

func (r *recorder) write(c call) {
	if r == nil {
		return
	}
	c.Provider = "kubernetes"
	b, err := json.Marshal(c)
	if err != nil {
		b, _ = json.Marshal(call{Provider: c.Provider, Op: c.Op, URN: c.URN, Error: "unrecordable inputs: " + err.Error()})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.f.Write(append(b, '\n'))
}
