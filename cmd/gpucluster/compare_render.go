package main

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/bench"
)

// compareMarkdown is the runs side by side: what each ran on, then out-of-place busbw per
// message size per run with its ratio to the first run. "Avg bus bandwidth" is not compared: it
// depends on the sweep.
func compareMarkdown(runs []bench.Run) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("| run | instance | nodes | ranks | placement | intra-node | inter-node | NCCL | plugin | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		plugin := orDash(r.NetPlugin)
		if r.PluginVersion != "" {
			plugin += " " + r.PluginVersion
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Label, orDash(r.InstanceType), count(r.Nodes), count(r.Ranks),
			orDash(r.Placement), orDash(r.IntraNode), orDash(r.InterNode), orDash(r.NCCLVersion), plugin, r.Verdict.Status)
	}
	if hasTraining(runs) {
		trainingTable(&b, runs)
	}
	if len(bench.Sizes(runs)) == 0 {
		return b.String()
	}
	w("\nOut-of-place bus bandwidth, GB/s (ratio to %s):\n\n| size |", runs[0].Label)
	for _, r := range runs {
		w(" %s |", r.Label)
	}
	w("\n|---:|")
	for range runs {
		w("---:|")
	}
	w("\n")
	for _, size := range bench.Sizes(runs) {
		w("| %s |", topology.HumanSize(size))
		first, haveFirst := runs[0].BusBW(size)
		for i, r := range runs {
			v, ok := r.BusBW(size)
			switch {
			case !ok:
				w(" – |")
			case i == 0 || !haveFirst || first == 0:
				w(" %.2f |", v)
			default:
				w(" %.2f (×%.2f) |", v, v/first)
			}
		}
		w("\n")
	}
	return b.String()
}

func hasTraining(runs []bench.Run) bool {
	for _, r := range runs {
		if r.Training != nil {
			return true
		}
	}
	return false
}

// trainingTable is the training runs' wall clocks and trainer runtimes, each with its ratio to
// the first run's (above 1: slower).
func trainingTable(b *strings.Builder, runs []bench.Run) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	w("\nTraining (ratio to %s; above 1 is slower):\n\n| run | wall clock (s) | trainer runtime (s) | samples/s |\n|---|---:|---:|---:|\n", runs[0].Label)
	first := runs[0].Training
	for i, r := range runs {
		t := r.Training
		if t == nil {
			w("| %s | – | – | – |\n", r.Label)
			continue
		}
		wall, runtime, rate := "–", "–", "–"
		if t.TimestampSource != "" {
			wall = fmt.Sprintf("%.0f", t.WallClockSeconds)
			if first != nil && first.TimestampSource != "" && first.WallClockSeconds > 0 && i > 0 {
				wall += fmt.Sprintf(" (×%.2f)", t.WallClockSeconds/first.WallClockSeconds)
			}
		}
		if t.TrainerRuntimeSeconds != nil {
			runtime = fmt.Sprintf("%.1f", *t.TrainerRuntimeSeconds)
			if first != nil && first.TrainerRuntimeSeconds != nil && *first.TrainerRuntimeSeconds > 0 && i > 0 {
				runtime += fmt.Sprintf(" (×%.2f)", *t.TrainerRuntimeSeconds / *first.TrainerRuntimeSeconds)
			}
		}
		if t.SamplesPerSecond != nil {
			rate = fmt.Sprintf("%g", *t.SamplesPerSecond)
		}
		w("| %s | %s | %s | %s |\n", r.Label, wall, runtime, rate)
	}
}

// svgMarker is in every chart compare writes: it may replace a file carrying it, and no other.
const svgMarker = "<!-- gpucluster bench compare -->"

// palette tells runs apart (Okabe-Ito: distinguishable with colour-blindness).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// compareSVG draws busbw against message size (log2 axis), one line per run.
func compareSVG(runs []bench.Run) string {
	const width, height, left, right, top, bottom = 760.0, 420.0, 70.0, 200.0, 30.0, 50.0
	all := bench.Sizes(runs)
	lo, hi := math.Log2(float64(all[0])), math.Log2(float64(all[len(all)-1]))
	if hi == lo {
		hi = lo + 1
	}
	maxBW := 0.0
	for _, r := range runs {
		for _, s := range all {
			if v, ok := r.BusBW(s); ok {
				maxBW = max(maxBW, v)
			}
		}
	}
	yMax := niceCeil(maxBW)
	x := func(size int64) float64 { return left + (math.Log2(float64(size))-lo)/(hi-lo)*(width-left-right) }
	y := func(v float64) float64 { return height - bottom - v/yMax*(height-top-bottom) }
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w("%s\n", svgMarker)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	w(`<text x="%g" y="18" font-size="14">NCCL all-reduce bus bandwidth (out of place)</text>`+"\n", left)
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		w(`<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n",
			left, y(v), width-right, y(v), left-6, y(v)+4, v)
	}
	w(`<text transform="translate(16 %g) rotate(-90)" text-anchor="middle">busbw (GB/s)</text>`+"\n", (height-bottom+top)/2)
	step := max(1, len(all)/8)
	for i, s := range all {
		if i%step != 0 && i != len(all)-1 {
			continue
		}
		w(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#999"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
			x(s), height-bottom, x(s), height-bottom+4, x(s), height-bottom+18, html.EscapeString(topology.HumanSize(s)))
	}
	w(`<text x="%g" y="%g" text-anchor="middle">message size</text>`+"\n", (left+width-right)/2, height-8)
	for i, r := range runs {
		colour := palette[i%len(palette)]
		var pts []string
		for _, s := range all {
			if v, ok := r.BusBW(s); ok {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s), y(v)))
			}
		}
		w(`<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
		ly := top + 20 + float64(i)*18
		w(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`+"\n",
			width-right+12, ly, width-right+32, ly, colour, width-right+38, ly+4, html.EscapeString(r.Label))
	}
	w("</svg>\n")
	return b.String()
}

// niceCeil rounds a maximum up to 1, 2 or 5 times a power of ten, for the axis.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}
