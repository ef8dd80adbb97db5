'use strict';
// fluebox/flue — fluebox as the sandbox of a Flue agent. Structural types
// only: nothing here imports @flue/runtime.
const flue = require('./lib/flue.cjs');

module.exports = {
  fluebox: flue.fluebox,
  FlueboxSandbox: flue.FlueboxSandbox,
  SandboxDiedError: flue.SandboxDiedError,
  SandboxOperationUnsupportedError: flue.SandboxOperationUnsupportedError,
  closeAll: flue.closeAll,
};
