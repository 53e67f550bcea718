package main

import (
	"fmt"
	"image/color"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"os"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// floorOf is the floor measurement a result compares with: the same
// workload and clients, at the same durability for PostgreSQL systems and
// at sync on for the others.
func floorOf(rs []Result, r Result) (Result, bool) {
	want := "sync on"
	if r.Durable == "sync off" {
		want = "sync off"
	}
	for _, f := range rs {
		if f.System == "floor" && f.Durable == want && f.Workload == r.Workload && f.Clients == r.Clients {
			return f, true
		}
	}
	return Result{}, false
}

func report(rs []Result, soak Soak, hs []Headline, purge PurgeRun, pooled Pooled, env []string, o options) string {
	var b strings.Builder
	title := "pg_lease benchmark"
	if o.quick {
		title += " (quick smoke run: short phases, figures are rough)"
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	for _, e := range env {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	fmt.Fprintf(&b, "- phases of %s each, one run; ratios are to the floor measured in the same run\n\n", o.phase)
	sections := []struct{ workload, title string }{
		{"cycle", "Acquire + release cycles on 1,000 names (each client on its own names)"},
		{"renew", "Renew-heavy: 8 clients, each renewing its 10 leases in turn"},
		{"keep-alive", "Keep-alive-heavy: 8 clients, each keeping its 10 names alive with one call (pg_lease 0.5.0's session, an etcd lease with the 10 keys); ops = names kept alive"},
		{"hot", "One hot name, 8 clients trying without waiting (ops = successful cycles)"},
	}
	for _, sec := range sections {
		fmt.Fprintf(&b, "## %s\n\n| system | durability | clients | ops/s | p50 | p99 | / floor |\n|---|---|---:|---:|---:|---:|---:|\n", sec.title)
		for _, r := range rs {
			if r.Workload != sec.workload {
				continue
			}
			ratio := ""
			if f, ok := floorOf(rs, r); ok && f.PerSec() > 0 {
				ratio = fmt.Sprintf("%.2f", r.PerSec()/f.PerSec())
			}
			extra := ""
			if r.Workload == "hot" {
				extra = fmt.Sprintf(" (%.0f tries/s)", float64(r.Tries)/r.Elapsed.Seconds())
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f%s | %s | %s | %s |\n", r.System, r.Durable, r.Clients, r.PerSec(), extra, ms(r.Pct(0.5)), ms(r.Pct(0.99)), ratio)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Hand-off: release to the blocked waiter's acquire returning\n\nFrom the release's return (committed), and from its start (the holder's call).\n\n| system | how it waits | p50 | p99 | from the call, p50 | from the call, p99 | a free name's acquire, p50 | waiter CPU while waiting |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		if r.Workload != "hand-off" {
			continue
		}
		how := "polls every 10 ms (client side)"
		cpu := "client side"
		switch r.System {
		case "pg_lease":
			how = "lease.acquire(max_wait), lease.poll_interval 10ms"
			cpu = fmt.Sprintf("%.1f%% of a core", 100*r.CPU)
		case "advisory lock":
			how = "pg_advisory_lock (lock queue)"
			cpu = fmt.Sprintf("%.1f%% of a core", 100*r.CPU)
		case "pg_lease, Go client":
			how = "client side: NOTIFY at release, LISTEN; jittered polling from 50 ms as the fallback"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.System, how, ms(r.Pct(0.5)), ms(r.Pct(0.99)), ms(pct(r.FromStart, 0.5)), ms(pct(r.FromStart, 0.99)), ms(pct(r.Acquire, 0.5)), cpu)
	}
	b.WriteString("\n" + pooledSection(pooled))
	b.WriteString(soakSection(soak))
	b.WriteString(purgeSection(purge))
	b.WriteString(headlineSection(hs, o.phase))
	b.WriteString(headlineLines(hs))
	return b.String()
}

// headlineLines end the report: one line per major.
func headlineLines(hs []Headline) string {
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(h.Line() + "\n")
	}
	return b.String()
}

// soakReport is the soak's section alone, for a run of -only soak.
func soakReport(soak Soak, env []string) string {
	var b strings.Builder
	b.WriteString("# pg_lease soak\n\n")
	for _, e := range env {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	b.WriteString("\n" + soakSection(soak))
	return b.String()
}

// soakSection is the soak's curve as a table: size, dead tuples, updates
// that were not HOT, the longest-held snapshot, and autovacuum and
// autoanalyze runs at every sample.
func soakSection(soak Soak) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Soak: %d acquire/release cycles on %d names (pg_lease, sync off, %d clients, autovacuum at the server's defaults, %s)\n\n",
		soak.Cycles, soak.Names, soak.Clients, soak.Elapsed.Round(time.Second))
	if soak.Options != "" {
		fmt.Fprintf(&b, "lease.leases has %s.\n\n", soak.Options)
	}
	b.WriteString("| cycles | table | × first | index | dead tuples | updates not HOT (since the last row) | longest snapshot (since the last row) | autovacuums | autoanalyzes |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var prev SoakSample
	for _, x := range soak.Samples {
		first := soak.Samples[0]
		fmt.Fprintf(&b, "| %d | %d kB | %.2f | %d kB | %d | %d of %d | %s | %d | %d |\n", x.Cycles, x.Table/1024, float64(x.Table)/float64(max(1, first.Table)),
			x.Index/1024, x.Dead, (x.Updates-x.HOTs)-(prev.Updates-prev.HOTs), x.Updates-prev.Updates, x.Snapshot.Round(time.Millisecond), x.Autovacuums, x.Autoanalyzes)
		prev = x
	}
	fmt.Fprintf(&b, "\nTable growth from the first row to the last: %.2f×.\n\n", soak.Growth())
	heading := "The session that held the longest snapshot of each row (its wait events as 100 ms polls saw them; none: on a CPU or waiting for one):\n\n"
	for _, x := range soak.Samples {
		if x.Holder != "" {
			fmt.Fprintf(&b, "%s- %d cycles, %s: %s\n", heading, x.Cycles, x.Snapshot.Round(time.Millisecond), x.Holder)
			heading = ""
		}
	}
	if heading == "" {
		b.WriteString("\n")
	}
	return b.String()
}

// soakChart draws the soak's table and index size against cycles.
func soakChart(soak Soak, file string) error {
	p := soakPlot(soak)
	img := vgimg.New(7*vg.Inch, 4*vg.Inch)
	p.Draw(draw.New(img))
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

func soakPlot(soak Soak) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("lease.leases under acquire/release, %d names", soak.Names)
	p.X.Label.Text = "cycles (millions)"
	p.Y.Label.Text = "kB"
	var table, index plotter.XYs
	for _, x := range soak.Samples {
		table = append(table, plotter.XY{X: float64(x.Cycles) / 1e6, Y: float64(x.Table) / 1024})
		index = append(index, plotter.XY{X: float64(x.Cycles) / 1e6, Y: float64(x.Index) / 1024})
	}
	for _, l := range []struct {
		name string
		xys  plotter.XYs
		c    color.RGBA
	}{{"table", table, color.RGBA{R: 51, G: 103, B: 145, A: 255}}, {"index", index, color.RGBA{R: 200, G: 120, B: 40, A: 255}}} {
		if len(l.xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(l.xys)
		if err != nil {
			continue
		}
		line.Color, points.Color = l.c, l.c
		p.Add(line, points)
		p.Legend.Add(l.name, line)
	}
	p.Y.Min = 0
	return p
}

// chart draws cycle throughput (8 clients), hand-off latency per system
// and the soak's table size.
func chart(rs []Result, soak Soak, file string) error {
	p1 := plot.New()
	p1.Title.Text = "acquire+release cycles/s, 8 clients"
	var vals plotter.Values
	var labels []string
	for _, r := range rs {
		if r.Workload == "cycle" && r.Clients == 8 {
			vals = append(vals, r.PerSec())
			labels = append(labels, strings.ReplaceAll(r.System+"\n"+r.Durable, "sync ", "sync "))
		}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 51, G: 103, B: 145, A: 255}
	p1.Add(bars)
	p1.NominalX(labels...)

	p2 := plot.New()
	p2.Title.Text = "hand-off delay, ms (p50 dark, p99 light)"
	var p50, p99 plotter.Values
	labels = nil
	for _, r := range rs {
		if r.Workload == "hand-off" {
			p50 = append(p50, float64(r.Pct(0.5))/1e6)
			p99 = append(p99, float64(r.Pct(0.99))/1e6)
			labels = append(labels, r.System)
		}
	}
	b50, err := plotter.NewBarChart(p50, vg.Points(18))
	if err != nil {
		return err
	}
	b99, err := plotter.NewBarChart(p99, vg.Points(18))
	if err != nil {
		return err
	}
	b50.Color = color.RGBA{R: 51, G: 103, B: 145, A: 255}
	b99.Color = color.RGBA{R: 150, G: 190, B: 220, A: 255}
	b50.Offset, b99.Offset = -vg.Points(9), vg.Points(9)
	p2.Add(b50, b99)
	p2.NominalX(labels...)

	p3 := soakPlot(soak)
	img := vgimg.New(19*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 3, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 4, PadLeft: vg.Millimeter * 4, PadRight: vg.Millimeter * 4, PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 4}
	cs := plot.Align([][]*plot.Plot{{p1, p2, p3}}, tiles, dc)
	p1.Draw(cs[0][0])
	p2.Draw(cs[0][1])
	p3.Draw(cs[0][2])
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
