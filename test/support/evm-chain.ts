/**
 * An in-process EVM chain for the x402 tests: Hardhat's simulated network
 * (EDR) with Base Sepolia's chain id, an EIP-3009 token compiled from test/contracts with the solc npm
 * package, and viem clients. Nothing leaves the process.
 */
import { readFileSync } from 'node:fs';
import { createHardhatRuntimeEnvironment } from 'hardhat/hre';
import solc from 'solc';
import { createPublicClient, createWalletClient, custom, defineChain, publicActions, type Abi, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

/** Base Sepolia's chain id, simulated in process, so that x402 v1 (which names networks: "base-sepolia") works too. */
export const CHAIN_ID = 84532;
export const NETWORK = `eip155:${CHAIN_ID}` as const;
/** Multicall3's address, where the official facilitator looks for tryAggregate. */
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11';
/** Hardhat's first default account (public test key): deploys the token and pays the facilitator's gas. */
const DEPLOYER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

export const chain = defineChain({
  id: CHAIN_ID,
  name: 'in-process',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://in-process.invalid'] } },
});

interface Compiled {
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
}

function compile(): Record<string, Compiled> {
  const source = readFileSync(new URL('../contracts/Eip3009Token.sol', import.meta.url), 'utf8');
  const input = {
    language: 'Solidity',
    sources: { 'Eip3009Token.sol': { content: source } },
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: false },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const file = out.contracts['Eip3009Token.sol']!;
  return Object.fromEntries(
    Object.entries(file).map(([n, c]) => [
      n,
      { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` as Hex, deployedBytecode: `0x${c.evm.deployedBytecode.object}` as Hex },
    ]),
  );
}

export interface TestChain {
  provider: { request(args: { method: string; params?: unknown }): Promise<unknown> };
  /** Wallet + public actions as the facilitator's account (gas payer). */
  facilitatorClient: ReturnType<typeof walletFor>;
  publicClient: ReturnType<typeof createPublicClient>;
  token: Address;
  tokenAbi: Abi;
  /** A fresh payer holding `funded` token units and no ether. */
  payer: PrivateKeyAccount;
  payerKey: Hex;
  payTo: Address;
  balanceOf(a: Address): Promise<bigint>;
  close(): Promise<void>;
}

function walletFor(provider: TestChain['provider'], account: PrivateKeyAccount) {
  return createWalletClient({ account, chain, transport: custom(provider), pollingInterval: 10 }).extend(publicActions);
}

export async function startTestChain(opts: { tokenName: string; tokenVersion: string; funded: bigint }): Promise<TestChain> {
  const compiled = compile();
  const hre = await createHardhatRuntimeEnvironment(
    { networks: { default: { type: 'edr-simulated', chainId: CHAIN_ID } } } as Parameters<typeof createHardhatRuntimeEnvironment>[0],
    {},
    process.cwd(),
  );
  const conn = await hre.network.connect();
  const provider = conn.provider as unknown as TestChain['provider'];
  const deployer = privateKeyToAccount(DEPLOYER_KEY);
  const wallet = walletFor(provider, deployer);
  const publicClient = createPublicClient({ chain, transport: custom(provider), pollingInterval: 10 });

  const tokenC = compiled.Eip3009Token!;
  const deployHash = await wallet.deployContract({ abi: tokenC.abi, bytecode: tokenC.bytecode, args: [opts.tokenName, opts.tokenVersion] });
  const token = (await publicClient.waitForTransactionReceipt({ hash: deployHash })).contractAddress!;
  await provider.request({ method: 'hardhat_setCode', params: [MULTICALL3, compiled.TryAggregate!.deployedBytecode] });

  const payerKey = generatePrivateKey();
  const payer = privateKeyToAccount(payerKey);
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const mint = await wallet.writeContract({ address: token, abi: tokenC.abi, functionName: 'mint', args: [payer.address, opts.funded] });
  await publicClient.waitForTransactionReceipt({ hash: mint });

  return {
    provider,
    facilitatorClient: wallet,
    publicClient,
    token,
    tokenAbi: tokenC.abi,
    payer,
    payerKey,
    payTo,
    balanceOf: async (a) =>
      (await publicClient.readContract({ address: token, abi: tokenC.abi, functionName: 'balanceOf', args: [a] })) as bigint,
    close: () => conn.close(),
  };
}
