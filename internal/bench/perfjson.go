package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
)

// perfFile is the file nccl-tests writes with -J FILE.json (nccl-tests 2.17+, src/util.cu):
// one object with the run's config, the devices, a results list and the footer checks.
// Only the fields a result needs are read; env is deliberately not kept (it can hold secrets).
type perfFile struct {
	Args        []string `json:"args"`
	NCCLVersion int      `json:"nccl_version"`
	Config      struct {
		Devices []struct {
			Hostname   string `json:"hostname"`
			DeviceInfo string `json:"device_info"`
		} `json:"devices"`
	} `json:"config"`
	Results *[]struct {
		Size       int64        `json:"size"`
		Count      int64        `json:"count"`
		Type       string       `json:"type"`
		Redop      string       `json:"redop"`
		Root       string       `json:"root"`
		OutOfPlace *jsonMeasure `json:"out_of_place"`
		InPlace    *jsonMeasure `json:"in_place"`
	} `json:"results"`
	OutOfBounds *struct {
		Count int64 `json:"count"`
	} `json:"out_of_bounds"`
	AverageBusBandwidth *struct {
		Bandwidth jsonNumber `json:"bandwidth"`
	} `json:"average_bus_bandwidth"`
}

type jsonMeasure struct {
	Time    *jsonNumber `json:"time"`
	CPUTime *jsonNumber `json:"cpu_time"`
	AlgBW   jsonNumber  `json:"alg_bw"`
	BusBW   jsonNumber  `json:"bus_bw"`
	NWrong  *jsonNumber `json:"nwrong"`
}

// jsonNumber is a number nccl-tests may write as the string "nan".
type jsonNumber float64

func (n *jsonNumber) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*n = jsonNumber(f)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*n = jsonNumber(f)
	return nil
}

// ParsePerfJSON reads an nccl-tests -J file. A file without "results" is not one.
func ParsePerfJSON(r io.Reader) (*Perf, error) {
	var f perfFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("nccl-tests JSON: %v (a file cut short by a crashed run is not a result)", err)
	}
	if f.Results == nil {
		return nil, fmt.Errorf("nccl-tests JSON: no \"results\" list")
	}
	// The JSON lists every device: its listing is whole.
	t := Table{NCCLLibrary: f.NCCLVersion, Ranks: len(f.Config.Devices), rankLines: len(f.Config.Devices), Line: 1}
	if len(f.Args) > 0 {
		t.Collective = path.Base(f.Args[0])
	}
	for _, d := range f.Config.Devices {
		t.Hosts = appendNew(t.Hosts, d.Hostname)
		t.Devices = appendNew(t.Devices, d.DeviceInfo)
	}
	for i, res := range *f.Results {
		root, err := strconv.Atoi(strings.TrimSpace(res.Root))
		if err != nil {
			return nil, fmt.Errorf("nccl-tests JSON: results[%d].root %q is not a rank", i, res.Root)
		}
		row := Row{Bytes: res.Size, Count: res.Count, Type: res.Type, Op: res.Redop, Root: root}
		if row.OutOfPlace, err = res.OutOfPlace.measure(); err != nil {
			return nil, fmt.Errorf("nccl-tests JSON: results[%d].out_of_place: %v", i, err)
		}
		if row.InPlace, err = res.InPlace.measure(); err != nil {
			return nil, fmt.Errorf("nccl-tests JSON: results[%d].in_place: %v", i, err)
		}
		t.Rows = append(t.Rows, row)
	}
	if f.OutOfBounds != nil {
		t.OutOfBounds = &f.OutOfBounds.Count
	}
	if f.AverageBusBandwidth != nil {
		v := float64(f.AverageBusBandwidth.Bandwidth)
		t.AvgBusBW = &v
	}
	return &Perf{Tables: []Table{t}}, nil
}

func (j *jsonMeasure) measure() (*Measure, error) {
	if j == nil {
		return nil, nil
	}
	m := &Measure{AlgBW: float64(j.AlgBW), BusBW: float64(j.BusBW)}
	switch {
	case j.Time != nil:
		m.TimeUs = float64(*j.Time)
	case j.CPUTime != nil:
		m.TimeUs = float64(*j.CPUTime)
	default:
		return nil, fmt.Errorf("no time")
	}
	if j.NWrong != nil {
		w := int64(*j.NWrong)
		m.Wrong = &w
	}
	return m, nil
}
