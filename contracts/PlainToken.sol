// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title PlainToken
/// @notice An ordinary 6-decimal ERC-20 with owner mint and NO EIP-3009 support.
contract PlainToken is ERC20, Ownable {
    constructor() ERC20("Plain Token", "PLN") Ownable(msg.sender) {}

    function decimals() public pure override returns (uint8) {
        return 6;
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
