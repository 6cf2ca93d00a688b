// SPDX-License-Identifier: MIT
// A stablecoin for tests and local chains: OpenZeppelin's ERC-20 with the decimals it is given
// (USDC has 6) and a mint anyone may call. Built by scripts/build-test-token.ts into
// TestToken.json beside it (a test checks that the committed build matches this source).
pragma solidity 0.8.37;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

contract TestToken is ERC20 {
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_) ERC20(name_, symbol_) {
        _decimals = decimals_;
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }
}
