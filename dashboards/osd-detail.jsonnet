// One OSD in detail: every stage's heatmap, BlueStore stages, replica sub-ops and the replica
// its writes waited for last, its block devices' queue and device time, its syscall latency.
local g = import 'lib/panels.libsonnet';
local sel = g.sel('fsid=~"$fsid", ceph_daemon="$ceph_daemon"');
local writeStages = ['throttle', 'receive', 'dispatch', 'queue', 'execute', 'bluestore_prepare',
                     'bluestore_aio_wait', 'bluestore_io_done', 'bluestore_kv_queued',
                     'bluestore_kv_commit', 'replication', 'commit'];
local stageHeatmap(stage) = g.heatmap(
  'Write stage ' + stage, 'Distribution of the ' + stage + ' stage of client writes on this OSD.',
  'sum by (le) (rate(cephscope_osd_op_stage_seconds_bucket{' + sel + ', op="write", stage="' + stage + '"}[$__rate_interval]))');
// The OSD's host, hidden: a device name (sda, nvme0n1) repeats on every host, and the device
// panels read only this OSD's host's.
local osdInstance = g.template.query(
  'osd_instance', 'Host of the OSD',
  'label_values(cephscope_osd_stage_available{cluster=~"$cluster", job=~"$job", fsid=~"$fsid", ceph_daemon="$ceph_daemon"}, instance)',
  hide=2);
local device = g.template.query(
  'device', 'Device',
  'label_values(cephscope_block_target_bytes_total{cluster=~"$cluster", job=~"$job", fsid=~"$fsid", ceph_daemon="$ceph_daemon"}, device)',
  multi=true, includeAll=true);

g.dashboard(
  'cephscope-osd-detail',
  'cephscope / OSD detail',
  'One OSD: each stage\'s distribution, BlueStore, replica sub-ops, its devices and its syscalls.',
  [g.template.datasource, g.template.cluster, g.template.job, g.template.instance, g.template.fsid,
   g.template.ceph_daemon(), osdInstance, device],
  [g.row('Write stages', 0)]
  + g.layout([stageHeatmap(s) for s in writeStages], y=1, width=8, height=7)
  + [g.row('BlueStore and replica sub-ops', 29)]
  + g.layout([
    g.timeseries('BlueStore stages (mean per transaction)', 'Mean time of each BlueStore transaction state of client writes, measured while tier 2 runs on this OSD (collectors.osd.detail: auto attaches it in windows; see the next panel).',
                 [g.target(g.mean('cephscope_osd_op_stage_seconds', sel + ', op="write", stage=~"bluestore_.*"', 'stage'), '{{stage}}')], stack=true),
    g.timeseries('Tier-2 detail windows', 'Whether tier 2 (BlueStore detail) is attached to this OSD, and the windows opened, by what opened them: rising slow ops, a minute\'s p99 over the bound, or an operator\'s POST /debug/osd-detail.',
                 [g.target('max(cephscope_osd_detail_active{' + sel + '})', 'attached'),
                  g.target('sum by (trigger) (increase(cephscope_osd_detail_windows_total{' + sel + '}[$__rate_interval]))', 'opened: {{trigger}}') + { refId: 'B' }]),
    g.timeseries('Replica sub-ops: p50 and p99', 'Replicated writes this OSD received from primaries: received to local commit.',
                 [g.target('histogram_quantile(0.5, sum by (le) (rate(cephscope_osd_subop_seconds_bucket{' + sel + '}[$__rate_interval])))', 'p50'),
                  g.target('histogram_quantile(0.99, sum by (le) (rate(cephscope_osd_subop_seconds_bucket{' + sel + '}[$__rate_interval])))', 'p99') + { refId: 'B' }]),
    g.timeseries('Replica that answered last', 'This OSD\'s client writes as primary per second, by the replica whose commit reply came last (tier 2 windows only): a replica far above its share of the PGs is the one these writes wait for.',
                 [g.target('sum by (replica) (rate(cephscope_osd_replica_last_total{' + sel + '}[$__rate_interval]))', '{{replica}}')], unit='ops', stack=true),
  ], y=30, width=6)
  + [g.row('Devices and syscalls', 38)]
  + g.layout([
    g.timeseries('Device time p99 (its devices, all requests)', 'Issue to completion of the block requests of the devices this OSD writes to (per-target latency is opt-in: collectors.block.target_histograms).',
                 [g.target('histogram_quantile(0.99, sum by (device, op, le) (rate(cephscope_block_device_seconds_bucket{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval])))', '{{device}} {{op}}')]),
    g.timeseries('Queue time p99 (its devices, all requests)', 'Insert to issue in the block layer\'s queue of this OSD\'s devices.',
                 [g.target('histogram_quantile(0.99, sum by (device, op, le) (rate(cephscope_block_queue_seconds_bucket{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval])))', '{{device}} {{op}}')]),
    g.timeseries('Submit stall p99 (its devices, all bios)', 'Time bios waited for a request (a frozen queue, no free tag) before the device or its queue saw them, on the devices this OSD writes to; and the bios merged into existing requests.',
                 [g.target('histogram_quantile(0.99, sum by (device, op, le) (rate(cephscope_block_submit_seconds_bucket{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval])))', '{{device}} {{op}}'),
                  g.target('sum by (device, op) (rate(cephscope_block_bio_merges_total{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval]))', 'merges/s {{device}} {{op}}') + { refId: 'B' }]),
    g.timeseries('Queue freezes (its devices)', 'How long its devices\' request queues stayed frozen (p99), and who froze them (an elevator switch: whoever wrote queue/scheduler).',
                 [g.target('histogram_quantile(0.99, sum by (device, le) (rate(cephscope_block_queue_frozen_seconds_bucket{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval])))', 'frozen p99 {{device}}'),
                  g.target('sum by (device, process) (increase(cephscope_block_queue_freezes_total{cluster=~"$cluster", job=~"$job", instance=~"$osd_instance", device=~"$device"}[$__rate_interval]))', 'freezes {{device}} by {{process}}') + { refId: 'B' }]),
    g.timeseries('Syscall mean latency', 'Mean time of each syscall this OSD makes (a Ceph daemon\'s syscalls carry their rate and mean; collectors.syscall.buckets: full gives their distributions).',
                 [g.target(g.mean('cephscope_syscall_seconds', sel, 'syscall'), '{{syscall}}')]),
    g.timeseries('Syscalls per second', 'How often this OSD makes each syscall.',
                 [g.target('sum by (syscall) (rate(cephscope_syscall_seconds_count{' + sel + '}[$__rate_interval])) or sum by (syscall) (histogram_count(rate(cephscope_syscall_seconds{' + sel + '}[$__rate_interval])))', '{{syscall}}')], unit='ops'),
  ], y=39)
)
