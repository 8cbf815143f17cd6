/** Every companion-site metered area of issue 9, registered as one module (one line in app.ts). */
import type { AppContext } from '../context.ts';
import type { Router } from '../router.ts';
import { registerClearRoutes } from './clear.ts';
import { registerNapRoutes } from './nap.ts';
import { registerPdtrRoutes } from './pdtr.ts';
import { registerOrnRoutes } from './orn.ts';
import { registerRelayRoutes } from './relay.ts';
import { registerRequireReceiptRoutes } from './require-receipt.ts';
import { registerDepositoryRoutes } from './depository.ts';
import { registerScaleRoutes } from './scale.ts';
import { registerConformityRoutes } from './conformity.ts';
import { registerFoundryRoutes } from './foundry.ts';
import { registerInferenceRoutes } from './inference.ts';

export function registerMeteredRoutes(router: Router, ctx: AppContext): void {
  registerClearRoutes(router, ctx);
  registerNapRoutes(router, ctx);
  registerPdtrRoutes(router, ctx);
  registerOrnRoutes(router, ctx);
  registerRelayRoutes(router, ctx);
  registerRequireReceiptRoutes(router, ctx);
  registerDepositoryRoutes(router, ctx);
  registerScaleRoutes(router, ctx);
  registerConformityRoutes(router, ctx);
  registerFoundryRoutes(router, ctx);
  registerInferenceRoutes(router, ctx);
}
