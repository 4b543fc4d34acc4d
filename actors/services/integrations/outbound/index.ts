export { classifyAddress, parseAddress, embeddedIpv4, OutboundAllowList, type AddressClass } from './addresses.js';
export {
  OutboundGuard, OutboundRefused, type OutboundRequest, type OutboundResponse, type RefusalReason, type Resolver, type VettedTarget,
} from './guarded-request.js';
