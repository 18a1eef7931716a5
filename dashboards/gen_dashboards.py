#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the Grafana dashboards (grafana/*.json) from the panel lists below.

Run after editing: python3 dashboards/gen_dashboards.py. The JSON is checked
in (provisioning reads it as is); tests/integration/dashboards.sh runs every
query of both dashboards against a real Prometheus and InfluxDB.
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PROM = {"type": "prometheus", "uid": "shootdown-prometheus"}
INFLUX = {"type": "influxdb", "uid": "shootdown-influxdb"}


def panel(pid, title, ds, targets, x, y, w=12, h=8, kind="timeseries", unit="short", desc=""):
    p = {
        "id": pid, "type": kind, "title": title, "description": desc, "datasource": ds,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"showLegend": True, "displayMode": "table", "placement": "right"}},
        "targets": [],
    }
    for i, t in enumerate(targets):
        t = dict(t)
        t.setdefault("refId", chr(ord("A") + i))
        t["datasource"] = ds
        p["targets"].append(t)
    return p


def dashboard(uid, title, panels, templating, annotations, desc):
    return {
        "uid": uid, "title": title, "description": desc, "tags": ["shootdown", "tlb"],
        "timezone": "browser", "schemaVersion": 38, "version": 1, "editable": True,
        "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": templating},
        "annotations": {"list": annotations},
        "panels": panels,
    }


def prometheus_dashboard():
    sel = 'instance=~"$instance"'
    prom = lambda expr, legend: {"expr": expr, "legendFormat": legend, "range": True}
    panels = [
        panel(1, "TLB shootdown IPIs received per CPU", PROM,
              [prom(f'sum by (instance, cpu) (rate(shootdown_tlb_interrupts_total{{{sel}}}[$__rate_interval]))',
                    "{{instance}} cpu {{cpu}}")], 0, 0, unit="ops",
              desc="/proc/interrupts TLB row per second (shootdown_tlb_interrupts_total)."),
        panel(2, "Shootdowns by reason (tlb:tlb_flush)", PROM,
              [prom(f'sum by (reason) (rate(shootdown_tlb_flush_total{{{sel}}}[$__rate_interval]))', "{{reason}}")],
              12, 0, unit="ops",
              desc="remote_send_ipi: initiator side; remote_shootdown: receiver side. Needs monitor with tracepoints."),
        panel(3, "Top initiating processes", PROM,
              [prom(f'topk(5, sum by (comm, pid, cgroup) (rate(shootdown_process_initiated_total{{{sel},pid!="other"}}[$__rate_interval])))',
                    "{{comm}} ({{pid}}) {{cgroup}}"),
               prom(f'sum(rate(shootdown_process_initiated_total{{{sel},pid="other"}}[$__rate_interval]))', "other")],
              0, 8, unit="ops", desc="Reason-4 flushes per process; at most --series named processes, the rest in other."),
        panel(4, "Shootdowns initiated and received per cgroup", PROM,
              [prom(f'sum by (cgroup) (rate(shootdown_cgroup_initiated_total{{{sel}}}[$__rate_interval]))',
                    "initiated {{cgroup}}"),
               prom(f'sum by (cgroup) (rate(shootdown_cgroup_received_total{{{sel}}}[$__rate_interval]))',
                    "received {{cgroup}}")],
              12, 8, unit="ops", desc="Per container (cgroup v2 path); bounded to --series cgroups plus other."),
        panel(5, "Function-call IPIs per CPU", PROM,
              [prom(f'sum by (instance, cpu) (rate(shootdown_call_function_interrupts_total{{{sel}}}[$__rate_interval]))',
                    "{{instance}} cpu {{cpu}}")], 0, 16, unit="ops"),
        panel(6, "Lost trace events", PROM,
              [prom(f'sum(increase(shootdown_trace_lost_events_total{{{sel}}}[$__rate_interval]))', "lost")],
              12, 16, unit="short", desc="Non-zero: the monitor's perf rings overflowed; reason counts are low."),
        panel(7, "CPU time lost to shootdowns per cgroup", PROM,
              [prom(f'sum by (cgroup) (rate(shootdown_cgroup_suffered_seconds_total{{{sel}}}[$__rate_interval]))',
                    "{{cgroup}}")],
              0, 24, unit="s",
              desc="Seconds per second in TLB shootdown IPI handlers (interrupt entry to exit, timed in the kernel) "
                   "while a task of the cgroup was interrupted; BPF engine; --series cgroups plus other."),
        panel(8, "Caused vs suffered per cgroup", PROM,
              [prom(f'sum by (cgroup) (rate(shootdown_cgroup_caused_wait_seconds_total{{{sel}}}[$__rate_interval]))',
                    "caused {{cgroup}}"),
               prom(f'sum by (cgroup) (rate(shootdown_cgroup_suffered_seconds_total{{{sel}}}[$__rate_interval]))',
                    "suffered {{cgroup}}")],
              12, 24, unit="s",
              desc="Caused: the cgroup's tasks waiting for their remote flushes. Suffered: handler time its tasks "
                   "lost to anyone's shootdowns. The wait needs fexit or csd tracepoints (docs/monitor.md, Time)."),
    ]
    templating = [{
        "name": "instance", "type": "query", "datasource": PROM, "label": "instance",
        "query": {"query": "label_values(shootdown_tlb_interrupts_total, instance)", "refId": "instance"},
        "definition": "label_values(shootdown_tlb_interrupts_total, instance)",
        "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2,
        "current": {"text": "All", "value": "$__all"},
    }]
    annotations = [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
                    "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts",
                    "type": "dashboard"}]
    return dashboard("shootdown-prometheus", "shootdown: TLB shootdowns (Prometheus)", panels, templating,
                     annotations, "shootdown monitor --listen, scraped by Prometheus (docs/monitor.md).")


def influx_dashboard():
    q = lambda text, alias="": {"query": text, "rawQuery": True, "resultFormat": "time_series", "alias": alias}
    run = '"run_id" =~ /^$run_id$/'
    panels = [
        panel(1, "TLB shootdown IPIs received per CPU", INFLUX,
              [q('SELECT mean("tlb_per_s") FROM "shootdown_monitor" WHERE $timeFilter '
                 'GROUP BY time($__interval), "host", "cpu" fill(null)', "$tag_host cpu $tag_cpu")],
              0, 0, unit="ops", desc="shootdown monitor --influx: /proc/interrupts TLB per second."),
        panel(2, "Shootdowns by reason (tlb:tlb_flush, per interval)", INFLUX,
              [q('SELECT sum("flush_remote_shootdown") AS "remote_shootdown", sum("flush_remote_send_ipi") AS '
                 '"remote_send_ipi", sum("flush_local_shootdown") AS "local_shootdown", sum("flush_local_mm_shootdown") '
                 'AS "local_mm_shootdown", sum("flush_task_switch") AS "task_switch", sum("flush_remote_wrong_cpu") AS '
                 '"remote_wrong_cpu" FROM "shootdown_monitor" WHERE $timeFilter GROUP BY time($__interval) fill(0)')],
              12, 0),
        panel(3, "Top initiating processes", INFLUX,
              [dict(q('SELECT sum("flushes") AS "flushes" FROM "shootdown_monitor_initiator" WHERE $timeFilter '
                      'GROUP BY "comm", "cgroup"'), resultFormat="table")],
              0, 8, kind="table", desc="Reason-4 flushes per process over the time range (each interval's --top)."),
        panel(4, "Shootdowns initiated and received per cgroup", INFLUX,
              [q('SELECT sum("initiated") FROM "shootdown_monitor_cgroup" WHERE $timeFilter '
                 'GROUP BY time($__interval), "cgroup" fill(0)', "initiated $tag_cgroup"),
               q('SELECT sum("received") FROM "shootdown_monitor_cgroup" WHERE $timeFilter '
                 'GROUP BY time($__interval), "cgroup" fill(0)', "received $tag_cgroup")],
              12, 8),
        panel(5, "Victim latency percentiles per batch (shootdown run)", INFLUX,
              [q(f'SELECT max("p50") AS "p50", max("p90") AS "p90", max("p99") AS "p99", max("p999") AS "p99.9", '
                 f'max("max") AS "max" FROM "shootdown_interval" WHERE $timeFilter AND {run} '
                 'GROUP BY time($__interval), "victim_cpu" fill(null)', "cpu $tag_victim_cpu $col")],
              0, 16, w=24, h=10, unit="ns",
              desc="shootdown run --influx: per report interval; release markers as annotations."),
        panel(6, "Release duration", INFLUX,
              [q(f'SELECT "duration_ns" FROM "shootdown_marker" WHERE $timeFilter AND "marker" = \'before\' AND {run}',
                 "release duration")],
              0, 26, unit="ns"),
        panel(7, "Shootdown IPIs received in the run, per CPU", INFLUX,
              [q(f'SELECT sum("tlb") FROM "shootdown_interrupts" WHERE $timeFilter AND {run} GROUP BY "cpu", "role"',
                 "cpu $tag_cpu ($tag_role)")],
              12, 26, kind="bargauge"),
        panel(8, "CPU time lost to shootdowns per cgroup", INFLUX,
              [q('SELECT sum("handler_ns") FROM "shootdown_monitor_cgroup" WHERE $timeFilter '
                 'GROUP BY time($__interval), "cgroup" fill(0)', "$tag_cgroup")],
              0, 34, unit="ns",
              desc="Nanoseconds per interval in TLB shootdown IPI handlers while a task of the cgroup was "
                   "interrupted (BPF engine)."),
        panel(9, "Caused vs suffered per cgroup", INFLUX,
              [q('SELECT sum("wait_ns") FROM "shootdown_monitor_cgroup" WHERE $timeFilter '
                 'GROUP BY time($__interval), "cgroup" fill(0)', "caused $tag_cgroup"),
               q('SELECT sum("handler_ns") FROM "shootdown_monitor_cgroup" WHERE $timeFilter '
                 'GROUP BY time($__interval), "cgroup" fill(0)', "suffered $tag_cgroup")],
              12, 34, unit="ns",
              desc="Caused: the cgroup's tasks waiting for their remote flushes; suffered: handler time its tasks "
                   "lost (BPF engine; the wait needs fexit or csd tracepoints)."),
    ]
    templating = [{
        "name": "run_id", "type": "query", "datasource": INFLUX, "label": "run",
        "query": 'SHOW TAG VALUES FROM "shootdown_interval" WITH KEY = "run_id"',
        "definition": 'SHOW TAG VALUES FROM "shootdown_interval" WITH KEY = "run_id"',
        "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2,
        "current": {"text": "All", "value": "$__all"},
    }]
    annotations = [
        {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True,
         "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"},
        {"name": "Release markers", "datasource": INFLUX, "enable": True, "iconColor": "red",
         "query": 'SELECT "marker", "index", "bytes", "release" FROM "shootdown_marker" WHERE $timeFilter',
         "textColumn": "release", "tagsColumn": "marker"},
    ]
    return dashboard("shootdown-influxdb", "shootdown: TLB shootdowns and victim latency (InfluxDB)", panels,
                     templating, annotations,
                     "shootdown monitor --influx and shootdown run --influx (docs/monitor.md, docs/formats.md).")


if __name__ == "__main__":
    for name, d in (("shootdown-prometheus.json", prometheus_dashboard()), ("shootdown-influxdb.json", influx_dashboard())):
        with open(os.path.join(HERE, "grafana", name), "w") as f:
            json.dump(d, f, indent=2)
            f.write("\n")
