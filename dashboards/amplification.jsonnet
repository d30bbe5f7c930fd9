// I/O amplification: bytes per layer (client, osd_op, replica, bluestore, syscall, block) and
// their ratios, per OSD, host and cluster.
local g = import 'lib/panels.libsonnet';
local sel = g.sel();
// Bytes per second from the per-host recording rule (5 minutes), summed BY.
local bytes(by, direction, layer='') =
  'sum by (' + by + ') (cephscope:host_layer_bytes:rate5m{' + sel + ', direction="' + direction + '"'
  + (if layer == '' then '' else ', layer="' + layer + '"') + '})';

g.dashboard(
  'cephscope-amplification',
  'cephscope / I/O amplification',
  'Bytes at each layer of the storage stack and their ratios: what one client byte costs below.',
  [g.template.datasource, g.template.cluster, g.template.job],
  [g.row('Bytes per layer', 0)]
  + g.layout([
    g.timeseries('Written bytes per layer (cluster)', 'Client ops on primaries (osd_op), replica writes, syscalls and block I/O, over 5 minutes (recording rule cephscope:host_layer_bytes:rate5m).',
                 [g.target(bytes('layer', 'write'), '{{layer}}')], unit='Bps'),
    g.timeseries('Read bytes per layer (cluster)', 'The same for reads.',
                 [g.target(bytes('layer', 'read'), '{{layer}}')], unit='Bps'),
  ], y=1)
  + [g.row('Ratios', 9)]
  + g.layout([
    g.timeseries('Write amplification per OSD (block / (osd_op + replica))', 'Bytes an OSD writes to its devices per byte it was asked to store (recording rule cephscope:osd_write_amplification:ratio5m).',
                 [g.target('cephscope:osd_write_amplification:ratio5m{' + sel + '}', '{{ceph_daemon}}')], unit='none'),
    g.timeseries('Write amplification per host', 'The same summed over a host\'s OSDs (cephscope:host_write_amplification:ratio5m).',
                 [g.target('cephscope:host_write_amplification:ratio5m{' + sel + '}', '{{instance}}')], unit='none'),
    g.stat('Cluster write amplification', 'Device bytes written per byte clients wrote (block / osd_op), over 5 minutes.',
           bytes('', 'write', 'block') + ' / ' + bytes('', 'write', 'osd_op')),
    // The busiest five per layer: a line per OSD and layer is 9,600 lines at 100 nodes of 24
    // OSDs, which no one reads (docs/fleet.md).
    g.timeseries('Written bytes of the busiest OSDs per layer', 'The five OSDs writing the most bytes at each layer over 5 minutes, at each point in time (recording rule cephscope:osd_layer_bytes:top5_rate5m).',
                 [g.target('topk by (layer) (5, max by (ceph_daemon, fsid, layer) (cephscope:osd_layer_bytes:top5_rate5m{' + sel + ', direction="write"}))', '{{ceph_daemon}} {{layer}}')], unit='Bps'),
    g.timeseries('BlueStore amplification per OSD (bluestore / (osd_op + replica))', 'What BlueStore itself writes to an OSD\'s device (data, deferred writes, RocksDB\'s WAL, BlueFS\'s log and SST files) per byte the OSD was asked to store (recording rule cephscope:osd_bluestore_amplification:ratio5m).',
                 [g.target('cephscope:osd_bluestore_amplification:ratio5m{' + sel + '}', '{{ceph_daemon}}')], unit='none'),
    g.timeseries('BlueStore\'s writes by kind (cluster)', 'The bluestore layer by kind: data (new space), deferred (in place, after the WAL), wal (RocksDB\'s WAL), bluefs (BlueFS\'s log and SST files).',
                 [g.target('sum by (kind) (rate(cephscope_layer_bytes_total{' + sel + ', layer="bluestore", direction="write"}[$__rate_interval]))', '{{kind}}')], unit='Bps'),
  ], y=10)
)
