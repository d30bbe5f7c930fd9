// cephscope's own health: collectors up, probes attached, stages available, events lost,
// BPF run time, scrape duration.
local g = import 'lib/panels.libsonnet';
local sel = g.sel();

g.dashboard(
  'cephscope-health',
  'cephscope / health',
  'Is cephscope measuring what it should, and what does it cost.',
  [g.template.datasource, g.template.cluster, g.template.job],
  g.layout([
    g.table('Collectors', 'Each collector, the hook it uses, and whether it is up.',
            'max by (instance, collector, hook) (cephscope_collector_up{' + sel + '})'),
    // These two count per-host recording rules (cephscope-health): over every probe's
    // status of 100 nodes of 24 OSDs they took up to 2.7 s (docs/fleet.md).
    g.table('Probes by reason', 'Probes attached (reason ok) or not, with the reason word (recording rule cephscope:host_probe_attached:count).',
            'sum by (collector, reason) (cephscope:host_probe_attached:count{' + sel + '})'),
    g.table('OSD stages by reason', 'OSD stages measured (ok) or not, per reason (recording rule cephscope:host_osd_stage_available:count).',
            'sum by (stage, reason) (cephscope:host_osd_stage_available:count{' + sel + '})'),
    g.timeseries('Events lost', 'Events not folded into a histogram, by collector and reason.',
                 [g.target('sum by (collector, reason) (rate(cephscope_events_lost_total{' + sel + '}[$__rate_interval]))', '{{collector}} {{reason}}')], unit='ops'),
    g.timeseries('BPF run time', 'CPU time of the daemon\'s BPF programs, per collector (needs kernel.bpf_stats_enabled=1).',
                 [g.target('sum by (collector) (rate(cephscope_bpf_program_run_seconds_total{' + sel + '}[$__rate_interval]))', '{{collector}}')], unit='percentunit'),
    g.timeseries('Scrape duration', 'Time each collector takes to read its maps, and Prometheus\' whole scrape of cephscope.',
                 [g.target('max by (collector) (cephscope_collector_scrape_duration_seconds{' + sel + '})', '{{collector}}'),
                  g.target('max by (instance) (scrape_duration_seconds{' + sel + '})', 'scrape {{instance}}') + { refId: 'B' }]),
    g.stat('Targets', 'Processes cephscope tracks (OSDs and clients), live or within their TTL.',
           'sum(cephscope_targets{' + sel + '})'),
    g.stat('Identity conflicts', 'Processes claiming an osd.N another process holds.',
           'sum(cephscope_osd_identity_conflict{' + sel + '})'),
  ], y=0)
)
