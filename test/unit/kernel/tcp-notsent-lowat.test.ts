// Invariant (decision 0054): the node warns at start exactly when the kernel may queue unbounded unsent bytes for a
// stalled event-stream client (tcp_notsent_lowat at Linux's "unset" value), and never on a value it cannot read.
import { expect } from 'chai';
import { notsentLowatWarning } from '../../../ops/kernel/tcp-notsent-lowat.js';

describe('tcp_notsent_lowat start-up check', () => {
  it('warns when the sysctl is unset (4294967295), naming the setting', () => {
    const w = notsentLowatWarning(() => '4294967295\n');
    expect(w?.value).to.equal(4_294_967_295);
    expect(w?.msg).to.include('net.ipv4.tcp_notsent_lowat');
  });

  it('says nothing when it is set', () => {
    expect(notsentLowatWarning(() => '131072\n')).to.equal(undefined);
  });

  it('says nothing when the file is missing or holds something else', () => {
    expect(notsentLowatWarning(() => { throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' }); })).to.equal(undefined);
    expect(notsentLowatWarning(() => 'garbage')).to.equal(undefined);
    expect(notsentLowatWarning(() => '')).to.equal(undefined);
  });
});
