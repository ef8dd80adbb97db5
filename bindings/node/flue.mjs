// fluebox/flue — ESM entry (the implementation is flue.cjs).
import cjs from './flue.cjs';

export const { fluebox, FlueboxSandbox, SandboxDiedError, SandboxOperationUnsupportedError, closeAll } = cjs;
export default cjs;
