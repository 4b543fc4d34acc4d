// Invariant: the server runs on the native uWebSockets.js binary or not at all — a missing binary is a start-up error
// naming platform, architecture and Node ABI, and UWS_USE_FALLBACK cannot switch us to the JavaScript fallback.
import { expect } from 'chai';
import { binaryName, loadNativeUws, loadUws } from '../../../http/uws.js';

describe('uWebSockets.js loader', () => {
  it('names the binary for this platform, architecture and ABI', () => {
    expect(binaryName()).to.equal(`uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  });

  it('loads the native module, whatever UWS_USE_FALLBACK says', () => {
    const before = process.env.UWS_USE_FALLBACK;
    process.env.UWS_USE_FALLBACK = '1';
    try {
      const uws = loadNativeUws(binaryName());
      expect(uws.App).to.be.a('function');
      expect(uws.us_socket_local_port).to.be.a('function');
      expect(loadUws()).to.equal(uws);
    } finally {
      if (before === undefined) delete process.env.UWS_USE_FALLBACK;
      else process.env.UWS_USE_FALLBACK = before;
    }
  });

  it('fails loudly, naming platform and ABI, when the binary for this Node is missing', () => {
    const missing = binaryName(process.platform, process.arch, '1');
    expect(() => loadNativeUws(missing)).to.throw(Error, new RegExp(`platform=${process.platform} arch=${process.arch} node ABI=${process.versions.modules}.*${missing}.*Refusing`));
  });
});
