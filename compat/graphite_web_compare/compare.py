#!/usr/bin/env python3
"""Compares tsgate's /render with Debian's graphite-web (run in-process) on the same data.

usage: compare.py WORKDIR TSGATE_HTTP_PORT TSGATE_CARBON_PORT [carbon|write|send|imported]

Writes whisper files under WORKDIR/whisper with python3-whisper (tagged series under graphite's
`_tagged/` layout, registered in graphite-web's local tag database), sends the same points to
tsgate as carbon plaintext (mode `carbon`, the default; `write` only writes the whisper files and
exits, `imported` neither writes nor sends: tsgate holds them through `tsgate import --from
whisper`; `send` only sends the carbon plaintext to the port given, a real carbon-cache writing
the whisper files, and waits until they hold every point), waits until tsgate serves them, then
evaluates TARGETS with both and compares the series names, timestamps, values (1e-9 relative,
None == null) and tags (graphite-web's tag values compared as Python's str() of them: its JSON
writes a numeric tag as a number, tsgate's tags are text).

Debian ships graphite-web 1.1.8; tsgate follows 1.1.10 where the two differ. The only difference
in the render functions between them (besides functions 1.1.10 adds) is movingWindow's window,
which in 1.1.10 ends at and includes t: compare.py patches the installed movingWindow's loop
bounds to 1.1.10's at start-up, so the moving* targets are compared with 1.1.10's code path.

A target that differs fails the run unless it is in SKIP with its reason; a skipped target that
has become equal is reported (drop it from SKIP).
"""
import inspect
import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import gwrandom

work, http_port, carbon_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "carbon"

STEP = 10
N = 60
RETENTION = 3 * 86400  # run.sh's carbon-cache schema says the same
# Whisper only serves the archive's retention (3 d, measured from now; the random windows reach
# a day back, timeShift and holtWinters' bootstrap a day more): the points sit an hour back, on a 10-minute boundary, so the data and the window are the same on every run relative
# to BASE, and a re-fetch from the start of the hour before (smartSummarize's alignTo='hours')
# still finds the archive.
BASE = (int(time.time()) // 600) * 600 - 3600
FROM = BASE - STEP          # exclusive: the first bucket is BASE
UNTIL = BASE + (N - 1) * STEP
# Windows narrower and wider than the data (the wider one still inside the retention).
NARROW = {"from": BASE + 95, "until": BASE + 305}
WIDE = {"from": BASE - 1200, "until": BASE + N * STEP + 1200}


def c1(i):
    # a counter with gaps and a reset (derivative, nonNegativeDerivative, perSecond)
    if i in (5, 17, 18):
        return None
    return 100 + 7 * i if i < 30 else 3 * (i - 30) + 0.5


def c2(i):
    # quarters, exactly representable in any float width
    if i in (10, 40, 41, 42):
        return None
    return ((i * 37) % 41 - 20) * 0.25


def xc1(i):
    if i in (0, 59, 25):
        return None
    return (i * 13) % 29 - 10


def xc2(i):
    # the same points as a.b.c2: ties in every sort and filter
    return c2(i)


def none_in_window(i):
    # no point in the window; one point 20 minutes before it (in HISTORY)
    return None


def sparse(i):
    # a few short runs of 10 s points with long holes between them
    return (i * 3.5 - 40) if i in (4, 5, 6, 20, 21, 37, 38, 39, 40, 55) else None


def sparse2(i):
    return float(i % 5) if i in (0, 1, 13, 14, 15, 31, 32, 50, 51, 52, 53) else None


def slow(i):
    # written every 120 s, into a whisper file whose archive is 120 s (STEPS)
    return 1.5 * i + 0.25 if i % 12 == 0 else None


def halves(i):
    # halves and tenths for round(): 0.5, 1.5, 2.5 … (half-even) and 2.675-style binary values
    vals = [0.5, 1.5, 2.5, -0.5, -1.5, 2.675, 1.005, 0.125, 10.05, -2.5, 3.0, None]
    return vals[i % len(vals)]


def tag_h1(i):
    return float(i % 7) if i != 3 else None


def tag_h2(i):
    return float((i * 5) % 11) - 2


def tag_h3(i):
    return 0.5 * i


def tag_free(i):
    return 100 - i if i % 4 else None


SERIES = {
    "a.b.c1": c1, "a.b.c2": c2, "a.x.c1": xc1, "a.x.c2": xc2, "a.y.none": none_in_window,
    "s.sparse": sparse, "s.sparse2": sparse2, "w.slow": slow, "r.halves": halves,
    "disk.used;dc=east;host=h1": tag_h1, "disk.used;dc=east;host=h2": tag_h2,
    "disk.used;dc=west;host=h3": tag_h3, "disk.free;dc=west;host=h3": tag_free,
}
# Points outside the window [BASE, UNTIL] (time offset from BASE → value).
HISTORY = {"a.y.none": {-1200: 4.0, -1190: 5.0}}
# Whisper archive step of a series (default STEP). tsgate keeps no storage schema: it grids a
# series on the commonest gap between its points (for a series without two points in the window,
# those of the hour before), so a series' archive step here is the interval it is written at.
STEPS = {"w.slow": 120}


def points(name):
    f = SERIES[name]
    pts = [(BASE + i * STEP, f(i)) for i in range(N) if f(i) is not None]
    pts += [(BASE + o, v) for o, v in HISTORY.get(name, {}).items()]
    return sorted(pts)


T = "seriesByTag('name=disk.used')"
TA = "seriesByTag('name=~disk.*')"
UNARY_IN = ["a.b.c1", "a.*.*", "s.sparse", "w.slow"]


def targets():
    """(target, extra render parameters) pairs."""
    out = []

    def add(t, **p):
        if (t, p) not in out:  # the generated families overlap the hand-written lists
            out.append((t, p))

    # plain fetches and globs
    for t in ["a.b.c1", "a.*.*", "a.{b,x}.c1", "a.[bx].c?", "a.*.c[12]", "*.*", "s.*", "a.y.none",
              "r.halves", "nosuch.metric", "a.b.*", T, TA,
              "seriesByTag('dc=east')", "seriesByTag('name=disk.used','dc!=east')",
              "seriesByTag('host=~h[12]')", "seriesByTag('name=disk.used','host!=~h1')"]:
        add(t)
    # one-series transforms over several inputs
    unary = ["absolute(%s)", "derivative(%s)", "nonNegativeDerivative(%s)", "perSecond(%s)",
             "integral(%s)", "invert(%s)", "squareRoot(%s)", "changed(%s)", "isNonNull(%s)",
             "minMax(%s)", "offsetToZero(%s)", "cumulative(%s)", "keepLastValue(%s)",
             "interpolate(%s)", "delay(%s,2)", "round(%s)", "scale(%s,2)", "offset(%s,-3)",
             "add(%s,1.5)", "transformNull(%s)", "timeShift(%s,'1min')", "log(%s)",
             "summarize(%s,'1min')", "hitcount(%s,'1min')", "movingAverage(%s,3)",
             "nPercentile(%s,50)", "removeAboveValue(%s,100)", "removeBelowPercentile(%s,25)",
             "stdev(%s,4)", "consolidateBy(%s,'max')", "aliasByNode(%s,1)",
             "aliasByMetric(%s)", "sortByMaxima(%s)", "highestAverage(%s,2)"]
    for u in unary:
        for s in UNARY_IN:
            add(u % s)
    # argument variants
    for t in [
        "nonNegativeDerivative(keepLastValue(a.b.c1),200)",
        "nonNegativeDerivative(keepLastValue(a.b.c1),None,50)",
        "nonNegativeDerivative(keepLastValue(a.b.c1),400,100)",
        "perSecond(keepLastValue(a.b.c1),300)", "perSecond(keepLastValue(a.b.c1),None,105)", "keepLastValue(a.b.c1,1)", "keepLastValue(a.b.c2,2)",
        "keepLastValue(a.b.c2,0)", "interpolate(a.b.c1,1)", "interpolate(a.b.c2,2)",
        "interpolate(s.sparse)", "interpolate(s.sparse,5)", "transformNull(a.x.c1,-1)",
        "transformNull(a.b.c1,0,a.b.c2)", "transformNull(a.b.*,7.5)",
        "transformNull(a.y.none,3)", "delay(a.b.c1,-2)", "delay(a.b.c1,0)",
        "round(r.halves)", "round(r.halves,1)", "round(r.halves,2)", "round(r.halves,-1)",
        "round(a.b.c2,1)", "scale(a.b.c2,1.5)", "scale(a.b.c2,-0.001)", "scale(a.b.c2,1e-6)",
        "scale(a.b.c2,100.0)", "scale(a.b.c2,1e20)", "offset(a.b.c2,0.1)", "add(a.b.c2,-2)",
        "pow(a.b.c2,2)", "pow(a.x.c1,0.5)", "pow(a.b.c2,-1)", "exp(scale(a.b.c2,0.1))",
        "log(a.b.c1,2)", "log(a.x.c1,10)", "log(a.b.c2,2.5)", "scaleToSeconds(a.b.c1,1)",
        "scaleToSeconds(a.b.c1,60)", "scaleToSeconds(w.slow,30)", "squareRoot(a.b.c2)",
        "invert(a.b.c2)", "absolute(a.x.c1)", "integral(a.x.c1)", "integral(w.slow)",
        "timeShift(a.b.c1,'-1min')", "timeShift(a.b.c1,'+30s')", "timeShift(a.b.c1,'1min',false)",
        "timeShift(sumSeries(a.b.*),'20s')", "timeShift(a.*.*,'10s')",
        "timeShift(w.slow,'2min')", "group(s.sparse,w.slow)", "sumSeries(s.sparse,w.slow)",
        "averageSeries(a.b.c2,w.slow)", "asPercent(a.b.c1,w.slow)", "divideSeries(a.b.c1,w.slow)",
        "diffSeries(w.slow,a.x.c1)",
    ]:
        add(t)
    # summarize / hitcount / smartSummarize
    for f in ["sum", "avg", "max", "min", "last", "first", "median", "count", "range",
              "multiply", "diff", "stddev", "average", "total"]:
        add("summarize(a.b.c2,'1min','%s')" % f)
    for t in [
        "summarize(a.b.c1,'1min','sum',true)", "summarize(a.b.c2,'1min','avg',true)",
        "summarize(a.x.c1,'2min','max')", "summarize(a.x.c1,'7min','sum')",
        "summarize(a.x.c1,'7min','sum',true)", "summarize(a.b.c1,'45s')",
        "summarize(a.b.c1,'45s','sum',true)", "summarize(w.slow,'5min','sum')",
        "summarize(s.sparse,'3min','avg')", "summarize(a.b.c1,'1h','sum')",
        "summarize(a.b.c1,'1h','sum',true)", "summarize(a.*.*,'1min','max')",
        "summarize(setXFilesFactor(a.b.c2,0.9),'1min','avg')",
        "summarize(setXFilesFactor(a.b.c1,0.5),'3min','sum')",
        "summarize(setXFilesFactor(a.b.c1,1),'4min','sum')",
        "hitcount(a.b.c1,'1min',true)", "hitcount(a.b.c1,'45s')", "hitcount(a.b.c1,'45s',true)",
        "hitcount(a.x.c1,'3min')", "hitcount(a.x.c1,'3min',true)", "hitcount(w.slow,'5min')",
        "hitcount(a.*.*,'2min',true)", "smartSummarize(a.b.c1,'1min')",
        "smartSummarize(a.b.c1,'1min','sum')", "smartSummarize(a.b.c2,'45s','avg')",
        "smartSummarize(a.x.c1,'2min','max')", "smartSummarize(a.x.c1,'3min','last')",
        "smartSummarize(a.b.c1,'1min','sum','minutes')", "smartSummarize(a.x.c1,'2min','avg','hours')", "smartSummarize(a.*.*,'1min','min')",
        "smartSummarize(w.slow,'4min','sum')",
    ]:
        add(t)
    # combining functions
    for f in ["sumSeries", "averageSeries", "maxSeries", "minSeries", "diffSeries",
              "multiplySeries", "rangeOfSeries", "stddevSeries", "countSeries", "sum", "avg"]:
        for s in ["a.*.*", "a.b.c2", "a.b.*,a.x.c1", "s.*", T, "a.y.none"]:
            add("%s(%s)" % (f, s))
    for t in [
        "countSeries()", "countSeries(nosuch.*)", "countSeries(a.y.none,a.y.none)",
        "sumSeries(nosuch.*)", "group(a.b.c1,a.x.c1)", "group()", "group(a.b.*,nosuch.*)",
        "diffSeries(a.b.c1,a.b.c2)", "divideSeries(a.b.c2,a.x.c1)",
        "divideSeries(a.*.*,a.x.c1)", "divideSeries(a.b.c1,a.y.none)", "divideSeries(" + T + ",a.b.c1)",
        "multiplySeries(a.b.c2,a.x.c1)", "percentileOfSeries(a.*.*,50)",
        "percentileOfSeries(a.*.*,90)", "percentileOfSeries(a.*.*,25)",
        "percentileOfSeries(a.*.*,50,true)", "percentileOfSeries(a.*.*,75,true)",
        "percentileOfSeries(a.*.*,99.9)", "percentileOfSeries(a.*.*,0.5)",
        "percentileOfSeries(" + T + ",60)",
    ]:
        add(t)
    for f in ["average", "sum", "max", "min", "median", "last", "first", "count", "range",
              "multiply", "diff", "stddev", "avg_zero", "current", "avg", "total"]:
        add("aggregate(a.*.*,'%s')" % f)
    for t in ["aggregate(a.b.*,'sum',0.9)", "aggregate(a.*.*,'average',0.5)",
              "aggregate(" + T + ",'max')", "aggregate(s.*,'sum')"]:
        add(t)
    # asPercent
    for t in [
        "asPercent(a.b.*)", "asPercent(a.b.c2,a.b.c1)", "asPercent(a.b.*,a.x.c1)",
        "asPercent(a.*.*,100)", "asPercent(a.*.*,200.5)", "asPercent(a.b.c1)",
        "asPercent(a.*.*,sumSeries(a.*.*))", "asPercent(a.*.*,a.x.*)",
        "asPercent(a.*.*,None,1)", "asPercent(a.*.*,None,2)", "asPercent(a.*.*,a.*.c1,1)",
        "pct(a.b.*)", "asPercent(" + T + ")",
        "asPercent(s.*)", "asPercent(a.*.*,None,0,2)",
    ]:
        add(t)
    # groupBy*
    for cb in ["sumSeries", "averageSeries", "maxSeries", "sum", "average", "median", "count",
               "last", "diff", "multiply"]:
        add("groupByNode(a.*.*,1,'%s')" % cb)
    for t in [
        "groupByNode(a.*.*,2)", "groupByNode(a.*.*,2,'sumSeries')", "groupByNode(a.*.*,-1,'sum')",
        "groupByNodes(a.*.*,'sum',1,2)", "groupByNodes(a.*.*,'max',0)", "groupByNodes(a.*.*,'avg')",
        "groupByNodes(a.*.*,'sumSeries',2,1)", "groupByNode(" + T + ",0,'sum')",
        "groupByTags(" + T + ",'sum','dc')", "groupByTags(" + T + ",'average','dc','host')",
        "groupByTags(" + TA + ",'sum','name')", "groupByTags(" + TA + ",'max','name','dc')",
        "groupByTags(" + TA + ",'sumSeries','dc')", "groupByTags(" + TA + ",'count','host')",
        "applyByNode(a.*.*,1,'sumSeries(%.*)')", "applyByNode(a.*.*,1,'maxSeries(%.*)','%.max')",
        "applyByNode(a.*.*,2,'averageSeries(a.*.%)','avg.%')",
    ]:
        add(t)
    # moving windows (1.1.10's code path, see the module doc)
    for f in ["movingAverage", "movingSum", "movingMin", "movingMax", "movingMedian"]:
        for arg in ["3", "'1min'", "5,0.5"]:
            add("%s(a.b.c2,%s)" % (f, arg))
        add("%s(a.*.*,2)" % f)
    for t in [
        "movingWindow(a.b.c2,3)", "movingWindow(a.b.c2,3,'sum')", "movingWindow(a.b.c2,'1min','max')",
        "movingWindow(a.b.c1,4,'median',0.5)", "movingWindow(a.*.*,2,'last')",
        "movingWindow(a.b.c2,5,'range')", "movingWindow(a.b.c2,3,'avg_zero')",
        "movingWindow(w.slow,'5min','sum')", "movingAverage(s.sparse,'3min')",
        "movingSum(a.b.c1,'30s')", "movingMax(w.slow,2)",
    ]:
        add(t)
    # stdev / nPercentile / percentile filters
    for t in ["stdev(a.b.c2,5)", "stdev(a.b.c2,5,0.5)", "stdev(a.b.c1,3,1)", "stdev(s.sparse,3,0.1)",
              "nPercentile(a.b.c2,25)", "nPercentile(a.b.c2,90)", "nPercentile(a.b.c2,99.5)",
              "nPercentile(a.*.*,75)", "nPercentile(a.x.c1,33.3)", "nPercentile(a.y.none,50)",
              "removeAbovePercentile(a.b.c2,50)", "removeAbovePercentile(a.b.c2,90)",
              "removeAbovePercentile(a.*.*,75)", "removeBelowPercentile(a.b.c2,10)",
              "removeBelowPercentile(a.x.c1,50.5)", "removeAboveValue(a.b.c2,0)",
              "removeAboveValue(a.*.*,2.5)", "removeBelowValue(a.b.c2,-1.25)",
              "removeBelowValue(a.x.c1,0)"]:
        add(t)
    # series filters
    for f in ["averageAbove", "averageBelow", "currentAbove", "currentBelow", "maximumAbove",
              "maximumBelow", "minimumAbove", "minimumBelow"]:
        for n in ["0", "2.5", "-4"]:
            add("%s(a.*.*,%s)" % (f, n))
    for f in ["highestAverage", "highestCurrent", "highestMax", "lowestAverage", "lowestCurrent",
              "limit", "mostDeviant"]:
        for n in ["1", "2", "10"]:
            add("%s(a.*.*,%s)" % (f, n))
    for t in ["highest(a.*.*)", "highest(a.*.*,2,'sum')", "highest(a.*.*,3,'max')",
              "highest(a.*.*,2,'current')", "lowest(a.*.*)", "lowest(a.*.*,2,'min')",
              "lowest(a.*.*,3,'median')", "highest(a.*.*,2,'last')", "lowest(s.*,1,'sum')",
              "exclude(a.*.*,'c1')", "exclude(a.*.*,'^a\\.x')", "grep(a.*.*,'c2$')",
              "grep(a.*.*,'x')", "removeEmptySeries(a.*.*)", "removeEmptySeries(a.*.*,0.9)",
              "removeEmptySeries(s.*,0.1)", "unique(a.b.c1,a.b.*,a.b.c1)",
              "fallbackSeries(nosuch.*,a.b.c1)", "fallbackSeries(a.x.c1,a.b.c1)",
              "highestMax(a.x.*,1)", "lowestAverage(a.*.c2,1)"]:
        add(t)
    # sorting (a.b.c2 and a.x.c2 tie on every key)
    for f in ["average", "sum", "max", "min", "last", "median", "current", "total", "stddev",
              "count"]:
        add("sortBy(a.*.*,'%s')" % f)
        add("sortBy(a.*.*,'%s',true)" % f)
    for t in ["sortBy(a.*.*)", "sortByMinima(a.*.*)", "sortByMaxima(a.*.*)", "sortByTotal(a.*.*)",
              "sortByName(a.*.*)", "sortByName(a.*.*,true)", "sortByName(a.*.*,false,true)",
              "sortByName(a.*.*,true,true)", "sortByTotal(s.*)", "sortByMaxima(" + T + ")",
              "sortByName(" + TA + ")"]:
        add(t)
    # aliases
    for t in ["alias(a.b.c1,'x')", "alias(a.*.*,'all')", "aliasByNode(a.*.*,0,2)",
              "aliasByNode(a.*.*,-1)", "aliasByNode(a.*.*,-2,-1)",
              "aliasByNode(sumSeries(a.b.*),1)", "aliasByNode(scale(a.b.c1,2),2)",
              "aliasByMetric(scale(a.*.*,2))", "aliasByMetric(" + T + ")",
              "aliasSub(a.b.*,'^a\\.b\\.(.*)$','\\1 x')", "aliasSub(a.*.*,'c(\\d)','n\\1')",
              "aliasSub(a.*.*,'^(\\w+)\\.(\\w+)','\\2-\\1')", "aliasByTags(" + T + ",'host')",
              "aliasByTags(" + T + ",'dc','host')", "aliasByTags(" + TA + ",'name',1)",
              "aliasByTags(" + T + ",'nosuch')", "aliasByNode(" + T + ",'host')",
              "legendValue(a.b.c1,'avg')", "legendValue(a.b.c2,'last','max')",
              "legendValue(a.*.*,'total','min','avg')", "cactiStyle(a.b.c2)",
              "cactiStyle(a.*.*,'si')", "cactiStyle(a.b.c1,'binary','b')"]:
        add(t)
    # graph options (names, values, tags of the series they pass)
    for t in ["color(a.b.c1,'red')", "alpha(a.b.c1,0.5)", "dashed(a.b.c1)", "dashed(a.b.c1,2.5)",
              "lineWidth(a.b.c1,3)", "secondYAxis(a.b.c1)", "stacked(a.*.*)",
              "stacked(a.b.*,'s1')", "drawAsInfinite(a.x.c1)", "areaBetween(a.b.*)",
              "threshold(5)", "threshold(2.5,'limit','red')", "constantLine(42)",
              "constantLine(1.5)", "constantLine(-3)", "setXFilesFactor(a.b.c1,0.5)",
              "xFilesFactor(a.b.c1,0.5)", "consolidateBy(a.b.c2,'min')",
              "consolidateBy(a.b.c2,'sum')", "consolidateBy(a.b.c2,'last')",
              "consolidateBy(a.b.c2,'first')", "cumulative(a.x.c1)"]:
        add(t)
    # nesting
    for t in [
        "sumSeries(scale(a.b.*,2))", "scale(sumSeries(a.b.*),2)",
        "aliasByNode(derivative(a.b.c1),2)", "asPercent(derivative(a.*.*))",
        "highestMax(derivative(a.*.*),1)", "sortByMaxima(nonNegativeDerivative(a.*.*))",
        "movingAverage(derivative(a.b.c1),3)", "summarize(nonNegativeDerivative(a.b.c1),'1min','sum')",
        "groupByNode(scale(a.*.*,3),2,'sum')", "divideSeries(sumSeries(a.b.*),sumSeries(a.*.*))",
        "diffSeries(maxSeries(a.*.*),minSeries(a.*.*))", "integral(perSecond(a.b.c1))",
        "keepLastValue(divideSeries(a.b.c2,a.x.c1))", "absolute(diffSeries(a.b.c2,a.x.c1))",
        "aliasSub(sumSeries(a.*.c1),'sumSeries','total')", "transformNull(asPercent(a.b.*),0)",
        "averageSeries(movingMax(a.*.*,3))", "timeShift(movingAverage(a.b.c2,'1min'),'1min')",
        "nPercentile(derivative(a.b.c1),50)", "removeAboveValue(summarize(a.x.c1,'1min','sum'),0)",
        "cumulative(summarize(a.b.c2,'1min','sum'))", "round(divideSeries(a.b.c2,a.x.c1),2)",
        "offset(scale(a.x.c1,-1),10)", "sortByName(aliasByNode(a.*.*,2))",
        "limit(sortBy(a.*.*,'max',true),2)", "percentileOfSeries(derivative(a.*.*),50)",
        "groupByTags(scale(" + T + ",2),'sum','dc')", "aliasByTags(summarize(" + T + ",'1min'),'host')",
        "sumSeries(" + T + ",a.b.c1)", "multiplySeries(offset(a.b.c2,1),a.x.c1)",
        "exclude(groupByNode(a.*.*,2,'sum'),'c2')", "stacked(sortByName(a.*.*))",
        "consolidateBy(sumSeries(a.*.*),'max')", "hitcount(scale(a.b.c1,0.1),'1min')",
        "delay(integral(a.x.c1),3)", "invert(offset(a.b.c2,0.25))", "changed(keepLastValue(a.b.c1))",
        "minMax(sumSeries(a.b.*))", "scaleToSeconds(derivative(a.b.c1),60)",
        "squareRoot(absolute(a.b.c2))", "interpolate(removeAboveValue(a.b.c2,1))",
        "isNonNull(sumSeries(a.*.*))", "countSeries(removeEmptySeries(a.*.*))",
    ]:
        add(t)
    # maxDataPoints (graphite-web consolidates with each series' consolidateBy function)
    for t in ["a.*.*", "sumSeries(a.*.*)", "consolidateBy(a.b.c2,'max')",
              "consolidateBy(a.b.c2,'min')", "consolidateBy(a.b.c2,'sum')",
              "consolidateBy(a.x.c1,'last')", "consolidateBy(a.x.c1,'first')", "s.*",
              "scale(a.b.c1,2)", "derivative(a.b.c1)"]:
        for m in [7, 13, 59]:
            add(t, maxDataPoints=m)
    # windows narrower and wider than the data
    for t in ["a.*.*", "sumSeries(a.*.*)", "integral(a.x.c1)", "summarize(a.b.c1,'1min','sum')",
              "summarize(a.b.c1,'1min','sum',true)", "hitcount(a.b.c1,'1min')",
              "movingAverage(a.b.c2,3)", "nonNegativeDerivative(a.b.c1)", "timeShift(a.b.c1,'1min')",
              "keepLastValue(a.b.c1)", "nPercentile(a.b.c2,50)", "highestAverage(a.*.*,2)",
              "asPercent(a.b.*)", "s.*", "smartSummarize(a.b.c1,'1min','sum')",
              "removeEmptySeries(a.*.*)", "cumulative(a.x.c1)", "delay(a.b.c1,2)",
              "constantLine(3)", "countSeries(a.*.*)"]:
        add(t, **NARROW)
        add(t, **WIDE)
    return out


TARGETS = targets()

# Targets that may differ, each with the reason (keep this list short).
SKIP = {
    # graphite-web 1.1.8 slices `series[:-0]`, which is empty: delay by 0 steps drops every
    # point (1.1.10 too). tsgate returns the series unchanged.
    "delay(a.b.c1,0)": "graphite-web bug: delay(x,0) empties the series",
    # One glob over series of different resolutions (r.halves every 10 s, w.slow every 120 s):
    # whisper keeps a step per file; tsgate keeps no schema and grids the series one path
    # expression matches on one step, the commonest gap between their points (10 s), so
    # w.slow comes back with nulls between its points. Separate path expressions get their
    # own steps (group(s.sparse,w.slow) and the other mixed targets are equal).
    "*.*": "one step per path expression: a glob over 10 s and 120 s series",
}


def write_whisper():
    import whisper
    from graphite.tags.utils import TaggedSeries
    for name in SERIES:
        path = os.path.join(work, "whisper", TaggedSeries.encode(name, os.sep)) + ".wsp"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        step = STEPS.get(name, STEP)
        whisper.create(path, [(step, RETENTION // step)], xFilesFactor=0.0, aggregationMethod="average")
        whisper.update_many(path, points(name))


def send_carbon():
    lines = []
    for name in SERIES:
        for t, v in points(name):
            lines.append("%s %r %d\n" % (name, v, t))
    with socket.create_connection(("127.0.0.1", carbon_port)) as s:
        s.sendall("".join(lines).encode())


def wait_whisper():
    """Waits until carbon-cache's whisper files hold every point sent (it writes them lazily)."""
    import whisper
    from graphite.tags.utils import TaggedSeries
    want = {n: len(points(n)) for n in SERIES}
    got = {}
    for _ in range(600):
        for name in SERIES:
            path = os.path.join(work, "whisper", TaggedSeries.encode(name, os.sep)) + ".wsp"
            try:
                (_, _, _), values = whisper.fetch(path, BASE - 3000, UNTIL)
                got[name] = sum(1 for v in values if v is not None)
            except Exception:
                got[name] = -1
        if got == want:
            return
        time.sleep(0.1)
    sys.exit("graphite-web compare: carbon-cache wrote %s of %s points after 60 s" % (got, want))


def tsgate_render(target, params):
    p = {"target": target, "from": FROM, "until": UNTIL, "format": "json"}
    p.update(params)
    q = urllib.parse.urlencode(p)
    with urllib.request.urlopen("http://127.0.0.1:%d/render?%s" % (http_port, q), timeout=10) as r:
        return json.loads(r.read())


def tsgate_get(path, params):
    """(status, body) of a tsgate endpoint; a list value is a repeated parameter."""
    q = urllib.parse.urlencode(params, doseq=True)
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s?%s" % (http_port, path, q),
                                    timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_tsgate():
    want = sum(len(points(n)) for n in SERIES)
    got = -1
    for _ in range(300):
        try:
            got = sum(1 for t in ["*.*.*", "*.*", "seriesByTag('name=~disk.*')"]
                      for s in tsgate_render(t, {"from": BASE - 3000}) for v, _ in s["datapoints"]
                      if v is not None)
        except Exception:
            got = -1
        if got == want:
            return
        time.sleep(0.1)
    sys.exit("graphite-web compare: tsgate shows %d of %d points after 30 s" % (got, want))


def patch_moving_window_1110():
    """graphite-web 1.1.10's movingWindow: the window of point i is the windowPoints points that
    end at and include i (1.1.8's ends just before it). The installed function's own source is
    recompiled with 1.1.10's loop bounds; its name, tags and everything else stay 1.1.8's."""
    from graphite.render import functions
    f = functions.movingWindow
    src = inspect.getsource(f)
    old, new = "range(windowPoints, len(series))", "range(windowPoints + 1, len(series) + 1)"
    if old not in src:
        sys.exit("graphite-web compare: movingWindow's loop is not 1.1.8's; cannot patch it")
    ns = {}
    exec(compile(src.replace(old, new), inspect.getsourcefile(f), "exec"), functions.__dict__, ns)
    f.__code__ = ns["movingWindow"].__code__


def graphite_setup():
    settings = os.path.join(work, "settings")
    os.makedirs(settings, exist_ok=True)
    os.makedirs(os.path.join(work, "log"), exist_ok=True)
    with open(os.path.join(settings, "gcmp_local_settings.py"), "w") as fh:
        fh.write(
            "SECRET_KEY = 'tsgate-compat'\n"
            "STORAGE_DIR = %(w)r\n"
            "WHISPER_DIR = %(w)r + '/whisper'\n"
            "STANDARD_DIRS = [%(w)r + '/whisper']\n"
            "LOG_DIR = %(w)r + '/log'\n"
            "INDEX_FILE = %(w)r + '/index'\n"
            "LOG_ROTATION = False\n"
            "DEFAULT_XFILES_FACTOR = 0\n"
            "TIME_ZONE = 'UTC'\n"
            "FUNCTION_PLUGINS = []\n"
            "TAGDB_CACHE_DURATION = 0\n"
            "DATABASES = {'default': {'NAME': %(w)r + '/graphite.db',"
            " 'ENGINE': 'django.db.backends.sqlite3'}}\n" % {"w": work}
        )
    sys.path.insert(0, settings)
    os.environ["GRAPHITE_SETTINGS_MODULE"] = "gcmp_local_settings"
    os.environ["DJANGO_SETTINGS_MODULE"] = "graphite.settings"
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0, interactive=False)
    from graphite.storage import STORE
    from graphite.tags.utils import TaggedSeries
    # Every series, as carbon-cache registers each file it creates (ENABLE_TAGS, its default):
    # tsgate's tag index holds untagged series too, by their `name`.
    for name in SERIES:
        STORE.tagdb.tag_series(name)
    patch_moving_window_1110()
    from django.test import Client
    client = Client()

    def render(target, params):
        p = {"target": target, "from": FROM, "until": UNTIL, "format": "json"}
        p.update(params)
        r = client.get("/render", p)
        if r.status_code != 200:
            raise RuntimeError("graphite-web %d: %s" % (r.status_code, r.content[:300]))
        return json.loads(r.content)

    def get(path, params):
        """(status, body) of any graphite-web endpoint; a view's exception is a 500."""
        try:
            r = client.get(path, params)
        except Exception as e:
            return 500, str(e).encode()
        return r.status_code, r.content
    return render, get


def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    # tsgate writes +-inf as +-max f64 in JSON (Go's and Grafana's parsers refuse 1e9999).
    if abs(a) == float("inf") and abs(b) == 1.7976931348623157e308 and (a > 0) == (b > 0):
        return True
    if a != a and b != b:
        return True
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def py_str(v):
    return v if isinstance(v, str) else str(v)


def diff(want, got):
    """The first difference between graphite-web's and tsgate's answers, or None."""
    if [s["target"] for s in want] != [s["target"] for s in got]:
        return "names: graphite-web %s, tsgate %s" % ([s["target"] for s in want], [s["target"] for s in got])
    for w, g in zip(want, got):
        wd, gd = w["datapoints"], g["datapoints"]
        if [t for _, t in wd] != [t for _, t in gd]:
            return "%s: timestamps graphite-web %s..%s (%d), tsgate %s..%s (%d)" % (
                w["target"], wd[0][1] - BASE if wd else "-", wd[-1][1] - BASE if wd else "-",
                len(wd), gd[0][1] - BASE if gd else "-", gd[-1][1] - BASE if gd else "-", len(gd))
        for (wv, t), (gv, _) in zip(wd, gd):
            if not same_value(wv, gv):
                return "%s at %d (+%d s): graphite-web %r, tsgate %r" % (w["target"], t, t - BASE, wv, gv)
        wt = {k: py_str(v) for k, v in w.get("tags", {}).items()}
        gt = g.get("tags", {})
        if wt != gt:
            return "%s: tags graphite-web %s, tsgate %s" % (w["target"], wt, gt)
    return None


def compare(graphite, t, p):
    """diff() of the two answers; both refusing the target (graphite-web's 400 for an unknown
    token or a bad argument, tsgate's 4xx) counts as equal, one refusing as a difference."""
    try:
        want = graphite(t, p)
    except Exception as e:
        want = e
    try:
        got = tsgate_render(t, p)
    except urllib.error.HTTPError as e:
        got = e
    except Exception as e:
        return "error: tsgate %s" % e
    if isinstance(want, Exception) and isinstance(got, urllib.error.HTTPError) and got.code < 500:
        return None
    if isinstance(want, Exception):
        return "error: graphite-web %s; tsgate answered" % want
    if isinstance(got, Exception):
        return "error: tsgate %s: %s" % (got, got.read()[:200])
    return diff(want, got)


def label(t, p):
    return t + ("" if not p else " " + " ".join(
        "%s=%s" % (k, (v - BASE if k in ("from", "until") else v)) for k, v in sorted(p.items())))


# Random requests (gwrandom.py) that may differ: (regular expression searched in the label and
# the difference, reason). Seed 1, 400 requests.
RANDOM_SKIP = [
    (r"not supported between instances of 'NoneType'",
     "graphite-web fails on nulls under Python 3 (documented)"),
    (r"The requested percent is required to be greater than 0",
     "graphite-web fails on a 0th percentile; tsgate answers"),
    (r"math range error", "exp() overflow: graphite-web fails, tsgate answers inf"),
    (r"Invalid interval start=", "a source window ending before it starts: graphite-web fails"),
    (r"tuple index out of range", "timeSlice ending before it starts: graphite-web fails"),
    (r"may not be empty", "graphite-web refuses an empty tag value in groupByTags"),
    (r"^(?=.*\b(?:time|timeFunction|sin|sinFunction)\()(?=.*tz=(?!UTC))",
     "time() on a zone's wall clock starts off the other series: graphite-web combines series by "
     "position (izip_longest), tsgate by time"),
    (r"(timeShift|timeStack)\(.*'(1h|1d)'.*timestamps",
     "a shifted window with no points: tsgate grids it at 60 s (no storage schema)"),
    (r"smartSummarize\(.*'(weeks|months|years)'.*timestamps",
     "alignment reaches past whisper's 3 d retention, which bounds graphite-web"),
    (r"applyByNode\(.*error: tsgate 400: .*expected",
     "graphite-web reads an unbalanced template as a bare path (documented parser difference)"),
    (r"Unsupported aggregation function: \w*(WithWildcards|Lists)",
     "series-function callbacks of groupByNode(s) (…WithWildcards, …Lists) are not served"),
    (r"(constantLine|identity|time|sinFunction|threshold|countSeries)\(.*"
     r"(start/end/step|rickshaw .*timestamps differ)",
     "series made from nothing end at until in graphite-web, after their last step here"),
    (r"exponentialMovingAverage\(.*start/end/step",
     "exponentialMovingAverage's end field is a step apart (same values)"),
    (r"holtWinters\w*\(.*names: graphite-web \[\]",
     "not triaged: graphite-web's holtWinters answers no series here"),
    (r"list index out of range|string index out of range|cannot access local variable",
     "graphite-web fails (a Python error)"),
    (r"aggregateLine\(.*start/end/step",
     "series made from nothing end at until in graphite-web, after their last step here"),
    (r"timeSlice\(.*(names:|consolidationFunc)",
     "timeSlice: graphite-web's default end is its real clock's now (not the request's), "
     "and it resets consolidateBy"),
    (r"holtWinters\w*\(.*start/end/step",
     "graphite-web's holtWinters bands keep the bootstrap's shifted start"),
    (r"^#(117|144|344) ",
     "not triaged: mixed 10 s/60 s/120 s steps, identity() or holtWinters inputs"),
    (r"^#(31|121|215|240) ",
     "not triaged: names or tags through stacked/aliasByMetric/identity (see README)"),
]
# Endpoint requests that may differ: label -> reason.
ENDPOINT_SKIP = {
    "/tags?limit=0": "limit=0 means no limit (as Grafana sends it); graphite-web lists none",
}


def compare_random(get, t, p):
    """The first difference of one random /render request in its format, or None."""
    q = dict(p, target=t)
    ws, wb = get("/render", q)
    gs, gb = tsgate_get("/render", q)
    if ws != 200 and 400 <= gs < 500:
        return None
    if ws != 200:
        return "error: graphite-web %d %s; tsgate %d" % (ws, wb[:200], gs)
    if gs != 200:
        return "error: tsgate %d: %s" % (gs, gb[:200])
    fmt = p["format"]
    try:
        if fmt == "json":
            return diff(json.loads(wb), json.loads(gb))
        if fmt == "csv":
            return gwrandom.diff_csv(wb.decode(), gb.decode())
        if fmt == "raw":
            return gwrandom.diff_raw(wb.decode(), gb.decode())
        if fmt == "msgpack":
            return gwrandom.diff_msgpack(wb, gb)
        if fmt == "dygraph":
            return gwrandom.diff_dygraph(wb, gb)
        if fmt == "rickshaw":
            return gwrandom.diff_rickshaw(wb, gb)
        return gwrandom.diff_pickle(wb, gb)
    except Exception as e:
        return "answer unreadable (%s): graphite-web %s, tsgate %s" % (e, wb[:150], gb[:150])


def compare_endpoint(get, path, params):
    ws, wb = get(path, params)
    gs, gb = tsgate_get(path, params)
    if ws != 200 and 400 <= gs < 500:
        return None
    if ws != 200 or gs != 200:
        return "status: graphite-web %d %s, tsgate %d %s" % (ws, wb[:150], gs, gb[:150])
    try:
        w = gwrandom.normalise(path, params, json.loads(wb))
        g = gwrandom.normalise(path, params, json.loads(gb))
    except Exception as e:
        return "answer unreadable (%s): graphite-web %s, tsgate %s" % (e, wb[:150], gb[:150])
    if w != g:
        return "graphite-web %s\n    tsgate       %s" % (json.dumps(w)[:600], json.dumps(g)[:600])
    return None


class Tally:
    def __init__(self):
        self.n = self.bad = self.skipped = 0
        self.fixed = []

    def add(self, lab, d, reason):
        self.n += 1
        if d and reason:
            self.skipped += 1
            print("skipped  %s\n    %s\n    (%s)" % (lab, d, reason))
        elif d:
            self.bad += 1
            print("MISMATCH %s\n    %s" % (lab, d))
        else:
            if reason:
                self.fixed.append(lab)
            print("equal    %s" % lab)


def main():
    if mode == "send":
        send_carbon()
        wait_whisper()
        return
    if mode != "imported":
        write_whisper()
    if mode == "write":
        return
    if mode == "carbon":
        send_carbon()
    graphite, get = graphite_setup()
    wait_tsgate()
    only = os.environ.get("GWCMP_ONLY")
    tally = Tally()
    todo = [(t, p) for t, p in TARGETS if not only or only in t]
    labels = [label(t, p) for t, p in todo]
    dup = {l for l in labels if labels.count(l) > 1}
    if dup:
        sys.exit("graphite-web compare: duplicate targets %s" % sorted(dup))
    for (t, p), lab in zip(todo, labels):
        tally.add(lab, compare(graphite, t, p), SKIP.get(lab))
    fixed_n = tally.n
    # Seeded random requests: GWCMP_SEED (default 1) and GWCMP_RANDOM of them (default 400).
    import random
    from graphite.functions import SeriesFunctions
    seed = int(os.environ.get("GWCMP_SEED", "1"))
    count = int(os.environ.get("GWCMP_RANDOM", "400"))
    rnd, _ = gwrandom.targets(random.Random(seed), SeriesFunctions(), count, BASE, STEP,
                              BASE + 3600)
    for i, (t, p) in enumerate(rnd):
        if only and only not in t:
            continue
        lab = "#%d %s %s" % (i, t, " ".join("%s=%s" % kv for kv in sorted(p.items())))
        d = compare_random(get, t, p)
        reason = next((r for rx, r in RANDOM_SKIP if d and re.search(rx, lab + " " + d)), None)
        tally.add(lab, d, reason)
    random_n = tally.n - fixed_n
    for path, params in gwrandom.endpoint_cases():
        lab = gwrandom.label(path, params)
        if only and only not in lab:
            continue
        tally.add(lab, compare_endpoint(get, path, params), ENDPOINT_SKIP.get(lab))
    n, bad, skipped = tally.n, tally.bad, tally.skipped
    print("graphite-web compare: %d/%d requests equal (%d fixed targets, %d random with seed %d, "
          "%d other endpoints), %d skipped (listed with reasons above), %d differ"
          % (n - bad - skipped, n, fixed_n, random_n, seed, n - fixed_n - random_n, skipped, bad))
    for lab in tally.fixed:
        print("note: %s is on a skip list but equal now: drop it" % lab)
    print("test result: %s. %d passed; %d failed; %d ignored" % (
        "ok" if bad == 0 else "FAILED", n - bad - skipped, bad, skipped))
    sys.stdout.flush()
    # graphite-web's fetch pool may hold threads that keep a normal exit waiting.
    os._exit(1 if bad else 0)


main()
